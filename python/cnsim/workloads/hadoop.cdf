# Hadoop flow sizes: Roy et al., "Inside the Social Network's (Datacenter) Network",
# SIGCOMM 2015 (a Facebook Hadoop cluster), as digitised for the HPCC artifact
# (Li et al., SIGCOMM 2019, traffic_gen/FbHdp_distribution.txt).
# size_bytes  cumulative_probability  (linear between points)
0        0.000
100      0.010
200      0.020
300      0.050
350      0.150
400      0.200
500      0.300
600      0.400
700      0.500
1000     0.600
2000     0.670
7000     0.700
30000    0.720
50000    0.820
80000    0.870
120000   0.900
300000   0.950
1000000  0.975
2000000  0.990
10000000 1.000
