//! A pcapng file per captured port (the format is small: a section header,
//! one interface with nanosecond timestamps, an enhanced packet block per
//! frame; pcapng draft, IETF opsawg). Simulated time 0 is the Unix epoch.

use crate::engine::Time;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const LINKTYPE_ETHERNET: u16 = 1;
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;

/// One capture file: the frames that left one port.
pub struct PcapWriter {
    out: BufWriter<File>,
    path: PathBuf,
    frames: u64,
    /// Bytes written (the file's length once flushed).
    bytes: u64,
}

/// Appends option `code` with `value`, padded to 32 bits. An option's
/// length is 16 bits: a longer value is cut at a character boundary (the
/// callers keep comments short; this keeps the file valid whatever).
fn option(b: &mut Vec<u8>, code: u16, value: &[u8]) {
    let mut n = value.len().min(u16::MAX as usize);
    while n < value.len() && n > 0 && (value[n] & 0xC0) == 0x80 {
        n -= 1; // not inside a UTF-8 sequence
    }
    b.extend_from_slice(&code.to_le_bytes());
    b.extend_from_slice(&(n as u16).to_le_bytes());
    b.extend_from_slice(&value[..n]);
    b.resize(b.len().next_multiple_of(4), 0);
}

/// Wraps `body` as a block of `kind` (type, total length, body, total length).
fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let total = (12 + body.len()) as u32;
    let mut b = Vec::with_capacity(total as usize);
    b.extend_from_slice(&kind.to_le_bytes());
    b.extend_from_slice(&total.to_le_bytes());
    b.extend_from_slice(body);
    b.extend_from_slice(&total.to_le_bytes());
    b
}

impl PcapWriter {
    /// Creates `path` with its section header (`comment`: what run wrote it)
    /// and one Ethernet interface named `name` (a port, FROM->TO) capturing
    /// `snaplen` bytes.
    pub fn create(path: &Path, name: &str, description: &str, snaplen: u32, comment: &str) -> io::Result<PcapWriter> {
        let mut out = BufWriter::new(File::create(path)?);
        let mut shb = Vec::new();
        shb.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes()); // major version
        shb.extend_from_slice(&0u16.to_le_bytes()); // minor version
        shb.extend_from_slice(&(-1i64).to_le_bytes()); // section length: not given
        if !comment.is_empty() {
            option(&mut shb, OPT_COMMENT, comment.as_bytes());
        }
        // The crate's version (lib.rs's VERSION is the same Cargo value), read
        // here without a use of the crate's root from a layer below it.
        option(&mut shb, SHB_USERAPPL, format!("cnsim {}", env!("CARGO_PKG_VERSION")).as_bytes());
        option(&mut shb, OPT_END, &[]);
        let shb = block(SHB, &shb);
        out.write_all(&shb)?;
        let mut idb = Vec::new();
        idb.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&snaplen.to_le_bytes());
        option(&mut idb, IF_NAME, name.as_bytes());
        option(&mut idb, IF_DESCRIPTION, description.as_bytes());
        option(&mut idb, IF_TSRESOL, &[9]); // 10^-9 s: nanoseconds
        option(&mut idb, OPT_END, &[]);
        let idb = block(IDB, &idb);
        out.write_all(&idb)?;
        Ok(PcapWriter {
            out,
            path: path.to_path_buf(),
            frames: 0,
            bytes: (shb.len() + idb.len()) as u64,
        })
    }

    /// A frame of `wire_len` bytes on the wire, captured as `data`, that
    /// started leaving the port at `t_ps` (its timestamp, in ns, truncated).
    pub fn write(&mut self, t_ps: Time, data: &[u8], wire_len: u32, comment: Option<&str>) -> io::Result<()> {
        let ns = t_ps / 1000;
        let mut epb = Vec::with_capacity(20 + data.len() + 8);
        epb.extend_from_slice(&0u32.to_le_bytes()); // interface 0
        epb.extend_from_slice(&((ns >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ns as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&wire_len.to_le_bytes());
        epb.extend_from_slice(data);
        epb.resize(epb.len().next_multiple_of(4), 0);
        if let Some(c) = comment {
            option(&mut epb, OPT_COMMENT, c.as_bytes());
            option(&mut epb, OPT_END, &[]);
        }
        let b = block(EPB, &epb);
        self.out.write_all(&b)?;
        self.frames += 1;
        self.bytes += b.len() as u64;
        Ok(())
    }

    /// The bytes `write` adds for a frame of `captured` bytes with `comment`.
    pub fn frame_bytes(captured: usize, comment: Option<&str>) -> u64 {
        let opt = |n: usize| 4 + n.min(u16::MAX as usize).next_multiple_of(4);
        let comment = comment.map_or(0, |c| opt(c.len()) + opt(0));
        (12 + 20 + captured.next_multiple_of(4) + comment) as u64
    }

    /// Bytes written so far (headers included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the file; returns how many frames it holds.
    pub fn finish(mut self) -> io::Result<u64> {
        self.out.flush()?;
        Ok(self.frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_well_formed_and_timestamps_in_nanoseconds() {
        let dir = std::env::temp_dir().join(format!("cnsim-pcap-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.pcapng");
        let mut w = PcapWriter::create(&path, "A->B", "test", 128, "cnsim.seed=0").unwrap();
        w.write(5_000_123_456, &[1, 2, 3, 4, 5], 64, Some("x")).unwrap();
        assert_eq!(w.finish().unwrap(), 1);
        let b = std::fs::read(&path).unwrap();
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        // Walk the blocks: each starts and ends with its length.
        let mut i = 0;
        let mut kinds = vec![];
        while i < b.len() {
            let len = u32_at(i + 4) as usize;
            assert_eq!(len % 4, 0);
            assert_eq!(u32_at(i + len - 4) as usize, len);
            kinds.push(u32_at(i));
            i += len;
        }
        assert_eq!(kinds, vec![SHB, IDB, EPB]);
        let epb = b.len() - u32_at(b.len() - 4) as usize;
        let ns = ((u32_at(epb + 12) as u64) << 32) | u32_at(epb + 16) as u64;
        assert_eq!(ns, 5_000_123);
        assert_eq!((u32_at(epb + 20), u32_at(epb + 24)), (5, 64));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
