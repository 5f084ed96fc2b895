# Web-search flow sizes: Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, Fig. 4
# (the query and background traffic of a production web-search cluster), as digitised
# for the HPCC artifact (Li et al., SIGCOMM 2019, traffic_gen/WebSearch_distribution.txt).
# size_bytes  cumulative_probability  (linear between points)
0        0.00
10000    0.15
20000    0.20
30000    0.30
50000    0.40
80000    0.53
200000   0.60
1000000  0.70
2000000  0.80
5000000  0.90
10000000 0.97
30000000 1.00
