//! Parquet files from columns: one writer for every result table (each run's
//! rows one row group), and the long-format time series written in bounded
//! row groups straight from the binned series (a long run's millions of rows
//! never exist at once as strings).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use std::collections::HashMap;

use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowWriterOptions};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

/// Rows per row group of the time series.
pub const SERIES_ROWS_PER_GROUP: usize = 1 << 20;

/// An error writing a file, with the path it was writing.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Parquet { path: String, source: ParquetError },
    #[error("{path}: {source}")]
    Arrow { path: String, source: ArrowError },
    #[error("{path}: {message}")]
    Shape { path: String, message: String },
}

impl WriteError {
    /// The file that was being written.
    pub fn path(&self) -> &str {
        match self {
            WriteError::Io { path, .. }
            | WriteError::Parquet { path, .. }
            | WriteError::Arrow { path, .. }
            | WriteError::Shape { path, .. } => path,
        }
    }

    /// The operating system's error under this one (a full disk, a file
    /// size limit, a name too long), if there is one.
    pub fn os_error(&self) -> Option<&std::io::Error> {
        let mut src: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = src {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                return Some(io);
            }
            src = e.source();
        }
        None
    }
}

/// Key-value metadata of a Parquet file's footer (what run wrote it).
pub type Metadata = [(String, String)];

/// Zstandard-compressed; dictionary encoding only for text columns (names
/// repeat; numbers rarely do, and hashing every one costs more than it saves);
/// `metadata` in the footer's key-value metadata.
fn props(schema: &Schema, metadata: &Metadata) -> WriterProperties {
    let kv: Vec<KeyValue> = metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())).collect();
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_dictionary_enabled(false)
        .set_key_value_metadata(if kv.is_empty() { None } else { Some(kv) });
    for f in schema.fields() {
        let text = match f.data_type() {
            DataType::Utf8 => true,
            DataType::Dictionary(_, v) => v.as_ref() == &DataType::Utf8,
            _ => false,
        };
        if text {
            b = b.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), true);
        }
    }
    b.build()
}

/// Writes `batches` (all of `schema`) as one Parquet file, one row group
/// per batch (a batch with no rows writes none), with `metadata` in its footer.
pub fn write_batches(path: &Path, schema: SchemaRef, batches: &[RecordBatch], metadata: &Metadata) -> Result<(), WriteError> {
    let p = path.display().to_string();
    let file = File::create(path).map_err(|source| WriteError::Io { path: p.clone(), source })?;
    let props = props(&schema, metadata);
    let mut w = ArrowWriter::try_new(file, schema, Some(props)).map_err(|source| WriteError::Parquet { path: p.clone(), source })?;
    for b in batches {
        if b.num_rows() > 0 {
            w.write(b).map_err(|source| WriteError::Parquet { path: p.clone(), source })?;
            w.flush().map_err(|source| WriteError::Parquet { path: p.clone(), source })?;
        }
    }
    w.close().map_err(|source| WriteError::Parquet { path: p, source })?;
    Ok(())
}

/// Builds a batch of named columns, checking they agree with `schema`.
pub fn batch(path: &Path, schema: &SchemaRef, columns: Vec<ArrayRef>) -> Result<RecordBatch, WriteError> {
    RecordBatch::try_new(schema.clone(), columns).map_err(|source| WriteError::Arrow {
        path: path.display().to_string(),
        source,
    })
}

/// One run's binned series: its seed, bin width, and (series, key, offset,
/// length) into `values`.
pub struct SeriesRun<'a> {
    pub seed: i64,
    pub bin_ps: u64,
    pub index: &'a [(String, String, usize, usize)],
    pub values: &'a [f64],
}

/// The schema of timeseries.parquet: seed, time_ms (each bin's start),
/// series, key, value.
pub fn series_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("seed", DataType::Int64, false),
        Field::new("time_ms", DataType::Float64, false),
        Field::new("series", DataType::Utf8, false),
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Float64, false),
    ]))
}

/// The schema the series are handed to the writer in: `series` and `key`
/// as dictionaries (one entry per name, an index per row), which the file
/// stores exactly as it stores a text column (dictionary-encoded UTF-8;
/// readers see `series_schema`, as no Arrow schema is embedded).
fn series_write_schema() -> SchemaRef {
    let dict = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    Arc::new(Schema::new(vec![
        Field::new("seed", DataType::Int64, false),
        Field::new("time_ms", DataType::Float64, false),
        Field::new("series", dict(), false),
        Field::new("key", dict(), false),
        Field::new("value", DataType::Float64, false),
    ]))
}

/// Writes the series of `runs` in long format, in row groups of at most
/// `SERIES_ROWS_PER_GROUP` rows: time_ms is bin x bin_ps / 1e9; `metadata`
/// in its footer. Every row repeats its series' and key's names: they are
/// handed over as dictionary indices, and the names get no min / max
/// statistics (a comparison of two strings per row, for row groups that hold
/// every name anyway). The two name columns are encoded on a second thread
/// while this one encodes the numbers: the names' dictionary encoding hashes
/// every row and is about half of the work (the bytes written do not depend
/// on it: each column is encoded alone, in order).
pub fn write_series(path: &Path, runs: &[SeriesRun<'_>], metadata: &Metadata) -> Result<(), WriteError> {
    let p = path.display().to_string();
    let schema = series_write_schema();
    let file = File::create(path).map_err(|source| WriteError::Io { path: p.clone(), source })?;
    let props = WriterProperties::into_builder(props(&schema, metadata))
        .set_column_statistics_enabled(ColumnPath::from("series"), EnabledStatistics::None)
        .set_column_statistics_enabled(ColumnPath::from("key"), EnabledStatistics::None)
        .build();
    let options = ArrowWriterOptions::new().with_properties(props).with_skip_arrow_metadata(true);
    let parquet_err = |source| WriteError::Parquet { path: p.clone(), source };
    let arrow_err = |source| WriteError::Arrow { path: p.clone(), source };
    let (mut w, groups) = ArrowWriter::try_new_with_options(file, schema.clone(), options)
        .and_then(|w| w.into_serialized_writer())
        .map_err(parquet_err)?;
    let mut n_groups = 0;
    let mut group = |chunk: &mut SeriesChunk| -> Result<(), WriteError> {
        let batch = chunk.take(&schema).map_err(arrow_err)?;
        let writers = groups.create_column_writers(n_groups).map_err(parquet_err)?;
        n_groups += 1;
        let chunks = encode_series_group(&schema, &batch, writers).map_err(parquet_err)?;
        let mut rg = w.next_row_group().map_err(parquet_err)?;
        for c in chunks {
            c.append_to_row_group(&mut rg).map_err(parquet_err)?;
        }
        rg.close().map_err(parquet_err)?;
        Ok(())
    };
    let mut chunk = SeriesChunk::default();
    for run in runs {
        let bin_ms = run.bin_ps as f64 / 1e9;
        for (series, key, off, len) in run.index {
            let Some(values) = run.values.get(*off..off + len) else {
                return Err(WriteError::Shape {
                    path: p.clone(),
                    message: format!("series {series} {key}: {off}+{len} is outside its {} values", run.values.len()),
                });
            };
            let (mut s, mut k) = chunk.names(series, key);
            for (b, &v) in values.iter().enumerate() {
                chunk.push(run.seed, b as f64 * bin_ms, s, k, v);
                if chunk.len() >= SERIES_ROWS_PER_GROUP {
                    group(&mut chunk)?;
                    (s, k) = chunk.names(series, key);
                }
            }
        }
    }
    if chunk.len() > 0 {
        group(&mut chunk)?;
    }
    w.close().map_err(parquet_err)?;
    Ok(())
}

/// The column chunks of one row group of series rows, in the schema's
/// order: `series` and `key` encoded on a scoped thread, the others here.
fn encode_series_group(
    schema: &SchemaRef,
    batch: &RecordBatch,
    writers: Vec<ArrowColumnWriter>,
) -> Result<Vec<ArrowColumnChunk>, ParquetError> {
    let encode = |jobs: Vec<(usize, ArrowColumnWriter)>| -> Result<Vec<(usize, ArrowColumnChunk)>, ParquetError> {
        jobs.into_iter()
            .map(|(i, mut writer)| {
                for leaf in compute_leaves(schema.field(i), batch.column(i))? {
                    writer.write(&leaf)?;
                }
                Ok((i, writer.close()?))
            })
            .collect()
    };
    let (names, numbers): (Vec<_>, Vec<_>) = writers
        .into_iter()
        .enumerate()
        .partition(|(i, _)| matches!(schema.field(*i).data_type(), DataType::Dictionary(..)));
    let (names, numbers) = std::thread::scope(|s| {
        let names = s.spawn(|| encode(names));
        let numbers = encode(numbers);
        (names.join().expect("the series name encoder does not panic"), numbers)
    });
    let mut chunks: Vec<(usize, ArrowColumnChunk)> = names?.into_iter().chain(numbers?).collect();
    chunks.sort_by_key(|(i, _)| *i);
    Ok(chunks.into_iter().map(|(_, c)| c).collect())
}

/// One row group of series rows: the names as indices into this group's
/// dictionaries of series and key names.
#[derive(Default)]
struct SeriesChunk {
    seed: Vec<i64>,
    time_ms: Vec<f64>,
    series: Vec<i32>,
    key: Vec<i32>,
    value: Vec<f64>,
    series_names: Dictionary,
    key_names: Dictionary,
}

/// Distinct names in first-seen order, and each one's index.
#[derive(Default)]
struct Dictionary {
    names: Vec<String>,
    index: HashMap<String, i32>,
}

impl Dictionary {
    fn get(&mut self, name: &str) -> i32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as i32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    fn take(&mut self) -> StringArray {
        self.index.clear();
        StringArray::from(std::mem::take(&mut self.names))
    }
}

impl SeriesChunk {
    fn len(&self) -> usize {
        self.seed.len()
    }

    /// The indices of a series' and a key's names in this group.
    fn names(&mut self, series: &str, key: &str) -> (i32, i32) {
        (self.series_names.get(series), self.key_names.get(key))
    }

    fn push(&mut self, seed: i64, t: f64, series: i32, key: i32, v: f64) {
        self.seed.push(seed);
        self.time_ms.push(t);
        self.series.push(series);
        self.key.push(key);
        self.value.push(v);
    }

    fn take(&mut self, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
        let dict = |keys: Vec<i32>, names: &mut Dictionary| -> Result<ArrayRef, ArrowError> {
            Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
                Int32Array::from(keys),
                Arc::new(names.take()),
            )?))
        };
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(std::mem::take(&mut self.seed))),
            Arc::new(Float64Array::from(std::mem::take(&mut self.time_ms))),
            dict(std::mem::take(&mut self.series), &mut self.series_names)?,
            dict(std::mem::take(&mut self.key), &mut self.key_names)?,
            Arc::new(Float64Array::from(std::mem::take(&mut self.value))),
        ];
        RecordBatch::try_new(schema.clone(), cols)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn read(path: &Path) -> Vec<RecordBatch> {
        let f = File::open(path).unwrap();
        ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect()
    }

    #[test]
    fn series_round_trip_in_long_format() {
        let dir = std::env::temp_dir().join(format!("cnsim-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ts.parquet");
        let index = vec![
            ("q".to_string(), "A->B".to_string(), 0, 3),
            ("r".to_string(), "x".to_string(), 3, 2),
        ];
        let values = [1.0, 2.0, 3.0, 4.0, 5.0];
        let runs = [SeriesRun {
            seed: 7,
            bin_ps: 500_000_000,
            index: &index,
            values: &values,
        }];
        let meta = [("cnsim.run".to_string(), "abc".to_string())];
        write_series(&path, &runs, &meta).unwrap();
        let f = File::open(&path).unwrap();
        let kv = ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .cloned()
            .unwrap();
        assert!(kv.iter().any(|k| k.key == "cnsim.run" && k.value.as_deref() == Some("abc")));
        let b = read(&path);
        let rows: usize = b.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 5);
        let t = b[0].column(1).as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(t.values().to_vec(), vec![0.0, 0.5, 1.0, 0.0, 0.5]);
        // Readers see text columns (no Arrow schema with dictionaries is embedded).
        assert_eq!(b[0].schema(), series_schema());
        let k = b[0].column(3).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(k.value(4), "x");
        let s = b[0].column(2).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((0..5).map(|i| s.value(i)).collect::<Vec<_>>(), ["q", "q", "q", "r", "r"]);
        assert_eq!(b[0].column(0).as_any().downcast_ref::<Int64Array>().unwrap().value(0), 7);
        let bad = [SeriesRun {
            seed: 0,
            bin_ps: 1,
            index: &index,
            values: &values[..4],
        }];
        assert!(write_series(&path, &bad, &[]).is_err(), "an index past the values is refused");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn series_longer_than_a_row_group_are_split_and_read_back_whole() {
        let dir = std::env::temp_dir().join(format!("cnsim-io-groups-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ts.parquet");
        let n = SERIES_ROWS_PER_GROUP + SERIES_ROWS_PER_GROUP / 2;
        let values: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
        let index = vec![
            ("q".to_string(), "A->B".to_string(), 0, n - 10),
            ("r".to_string(), "x".to_string(), n - 10, 10),
        ];
        let runs = [SeriesRun {
            seed: 3,
            bin_ps: 1_000_000,
            index: &index,
            values: &values,
        }];
        write_series(&path, &runs, &[]).unwrap();
        let f = File::open(&path).unwrap();
        let groups = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().metadata().num_row_groups();
        assert_eq!(groups, 2);
        let b = read(&path);
        let got: Vec<f64> = b
            .iter()
            .flat_map(|b| b.column(4).as_any().downcast_ref::<Float64Array>().unwrap().values().to_vec())
            .collect();
        assert_eq!(got, values);
        let last = b.last().unwrap();
        let names = |c: usize| last.column(c).as_any().downcast_ref::<StringArray>().unwrap().clone();
        assert_eq!(names(2).value(last.num_rows() - 1), "r");
        assert_eq!(names(3).value(last.num_rows() - 11), "A->B");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_os_error_is_found_under_the_write_error() {
        let missing = std::env::temp_dir().join(format!("cnsim-io-none-{}/x/ts.parquet", std::process::id()));
        let e = write_series(&missing, &[], &[]).unwrap_err();
        assert_eq!(e.path(), missing.display().to_string());
        assert_eq!(e.os_error().unwrap().kind(), std::io::ErrorKind::NotFound);
    }
}
