//! The frames a capture shows: the simulated frame laid out with the
//! headers of the protocol it models (docs/looking-at-frames.md lists every
//! field, and which are synthetic).
//!
//! - data of open-loop sources: Ethernet II, an 802.1Q tag carrying the
//!   priority, QCN's CN-TAG (EtherType 0x22E9) when the scheme is QCN, and
//!   EtherType 0x88B5 (IEEE local experimental) over a zero payload;
//! - data of transport flows: RoCEv2 (IPv4, UDP port 4791, InfiniBand BTH:
//!   RC SEND first / middle / last / only, destination QP, PSN) with the
//!   ECN bits in the IP header (ECT(0), or CE once marked);
//! - ACK / NACK: RoCEv2 RC Acknowledge with its AETH; DCQCN's CNP: RoCEv2
//!   BTH opcode 0x81;
//! - PAUSE: 802.3x MAC Control (EtherType 0x8808, opcode 0x0001) or, in runs
//!   of transport flows, 802.1Qbb PFC (opcode 0x0101, class-enable vector
//!   and eight pause times);
//! - QCN's CNM (EtherType 0x22E7) as IEEE 802.1Q lays it out; BCN's message
//!   (EtherType 0x8904) with the fields of the BCN proposal.
//!
//! A capture holds a frame without its FCS: at most `snaplen` bytes of it,
//! the payload zero; its length on the wire is the simulated length, or
//! the real protocol's minimum where its headers need more (a RoCEv2 ACK is
//! 70 bytes, a CNP 82, against the simulation's 64-byte control frames).

use crate::frame::{FrameKind, NO_FLOW, NO_NODE};
use crate::scheme::{ExtFields, NoteFormat};

/// 802.1Q priority (PCP) of data frames: one data class, the one RoCE
/// deployments give PFC.
pub const DATA_PRIORITY: u8 = 3;
/// 802.1Q priority of control frames (notifications, ACKs): 802.1Qau's
/// default CNM priority; cnsim serves them ahead of data, never paused.
pub const CONTROL_PRIORITY: u8 = 6;
/// VLAN id of every tagged frame.
pub const VLAN_ID: u16 = 1;

pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
pub const ETHERTYPE_CN_TAG: u16 = 0x22E9;
pub const ETHERTYPE_CNM: u16 = 0x22E7;
pub const ETHERTYPE_BCN: u16 = 0x8904;
/// IEEE 802 Local Experimental EtherType 1: the payload of open-loop data.
pub const ETHERTYPE_EXPERIMENTAL: u16 = 0x88B5;
pub const ROCEV2_UDP_PORT: u16 = 4791;

pub const OP_SEND_FIRST: u8 = 0x00;
pub const OP_SEND_MIDDLE: u8 = 0x01;
pub const OP_SEND_LAST: u8 = 0x02;
pub const OP_SEND_ONLY: u8 = 0x04;
pub const OP_ACKNOWLEDGE: u8 = 0x11;
pub const OP_CNP: u8 = 0x81;
/// AETH syndromes: ACK with no credit count (0x1F), NAK PSN sequence error.
pub const AETH_ACK: u8 = 0x1F;
pub const AETH_NAK_SEQ: u8 = 0x60;

/// Bytes of the FCS, counted in a frame's length but not captured.
pub const FCS_BYTES: u32 = 4;
/// The shortest Ethernet frame, FCS included.
pub const MIN_FRAME: u32 = 64;

/// MAC address of station `s` (locally administered, synthetic).
pub fn station_mac(s: u32) -> [u8; 6] {
    [0x02, 0x00, (s >> 24) as u8, (s >> 16) as u8, (s >> 8) as u8, s as u8]
}

/// MAC address of port `p`'s transmitter (a bridge port's, for PAUSE
/// frames and the CPs' notifications).
pub fn port_mac(p: u32) -> [u8; 6] {
    [0x02, 0x00, 0x01, (p >> 16) as u8, (p >> 8) as u8, p as u8]
}

/// IPv4 address of station `s`: 10.0.0.0 + s + 1.
pub fn station_ip(s: u32) -> [u8; 4] {
    (0x0A00_0000u32.wrapping_add(s).wrapping_add(1)).to_be_bytes()
}

/// InfiniBand queue pair of a transport flow (both ends use the number), or
/// of an open-loop pair (source, destination).
pub fn queue_pair(flow: u32, src: u32, dst: u32) -> u32 {
    if flow != NO_FLOW {
        0x100 + (flow % 0x7F_FF00)
    } else {
        0x80_0000 | (((src << 12) ^ dst) & 0x7F_FFFF)
    }
}

/// The CN-TAG's flow id of data frames to station `dst` (the RP's
/// per-flow RL is keyed by the destination).
pub fn cn_flow_id(dst: u32) -> u16 {
    (dst as u16).wrapping_add(1)
}

/// A notification's own fields, known where it was sent.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoteInfo {
    /// The CP's port (a CP's notification), else `None` (a notification point's).
    pub cp_port: Option<u32>,
    /// Qoff and Qdelta in the scheme's units (BCN: pages; QCN: bytes).
    pub qoff: f64,
    pub qdelta: f64,
    /// The sequence number of the frame it answers.
    pub sampled_seq: u32,
}

/// Everything a captured frame is built from.
#[derive(Clone, Copy, Debug)]
pub struct WireFrame {
    pub kind: FrameKind,
    /// Simulated length on the wire (bytes, FCS included).
    pub len: u16,
    pub src: u32,
    pub dst: u32,
    pub about: u32,
    pub flow: u32,
    pub seq: u32,
    pub cpid: u32,
    pub fields: ExtFields,
    /// The port sending it.
    pub port: u32,
    /// A transport flow's frames (RC SEND first / middle / last / only).
    pub n_frames: Option<u32>,
    /// A notification's fields.
    pub note: Option<NoteInfo>,
    /// PAUSE frames as 802.1Qbb PFC (else 802.3x).
    pub pfc: bool,
    /// Data: its 802.1p priority. PAUSE: a PFC frame's class-enable vector
    /// (0: 802.3x, or PFC for `DATA_PRIORITY` when `pfc`).
    pub prio: u8,
    /// Its entropy value (a sprayed transport's; UET's UDP source port).
    pub entropy: u16,
}

/// The priority an event row shows for a PAUSE frame of class-enable vector
/// `classes`: its lowest priority, `DATA_PRIORITY` for 802.3x.
pub fn pause_priority(classes: u8) -> u8 {
    if classes == 0 {
        DATA_PRIORITY
    } else {
        classes.trailing_zeros() as u8
    }
}

/// The captured bytes of `f` (at most `snaplen`) and its length on the wire.
pub fn encode(f: &WireFrame, snaplen: u32) -> (Vec<u8>, u32) {
    let mut b = Vec::with_capacity(128);
    if let (Some(u), true) = (f.fields.uet, f.kind != FrameKind::Pause) {
        return uet(f, &u, snaplen);
    }
    match f.kind {
        FrameKind::Pause => pause(&mut b, f),
        FrameKind::Data if f.flow != NO_FLOW => return roce(f, snaplen, rc_data_opcode(f), f.seq, f.prio, Ecn::Capable(f.fields.ce)),
        FrameKind::Data => {
            ethernet(&mut b, station_mac(f.dst), station_mac(f.src), f.prio);
            if f.fields.note == NoteFormat::Cnm {
                put16(&mut b, ETHERTYPE_CN_TAG);
                put16(&mut b, cn_flow_id(f.dst));
            }
            put16(&mut b, ETHERTYPE_EXPERIMENTAL);
        }
        FrameKind::Ack | FrameKind::Nack => {
            let psn = if f.kind == FrameKind::Ack { f.seq.wrapping_sub(1) } else { f.seq };
            return roce(f, snaplen, OP_ACKNOWLEDGE, psn, CONTROL_PRIORITY, Ecn::NotCapable);
        }
        FrameKind::Trimmed => return roce(f, snaplen, rc_data_opcode(f), f.seq, CONTROL_PRIORITY, Ecn::Capable(f.fields.ce)),
        FrameKind::Note => match f.fields.note {
            NoteFormat::Cnp => return roce(f, snaplen, OP_CNP, 0, CONTROL_PRIORITY, Ecn::NotCapable),
            NoteFormat::Cnm => cnm(&mut b, f),
            NoteFormat::Bcn | NoteFormat::BcnStop => bcn(&mut b, f),
            NoteFormat::None => {
                ethernet(&mut b, station_mac(f.dst), note_source(f), CONTROL_PRIORITY);
                put16(&mut b, ETHERTYPE_EXPERIMENTAL);
            }
        },
    }
    finish_l2(b, f.len, snaplen)
}

/// The frame of `b` (headers, payload zero) padded to `len` (FCS not
/// captured; at least the minimum frame), cut at `snaplen`.
fn finish_l2(mut b: Vec<u8>, len: u16, snaplen: u32) -> (Vec<u8>, u32) {
    let wire = (len as u32).max(MIN_FRAME).max(b.len() as u32 + FCS_BYTES);
    b.resize(((wire - FCS_BYTES).min(snaplen)) as usize, 0);
    (b, wire)
}

fn put16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_be_bytes());
}

fn put32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_be_bytes());
}

/// Destination, source and an 802.1Q tag (the EtherType after it is the caller's).
fn ethernet(b: &mut Vec<u8>, dst: [u8; 6], src: [u8; 6], priority: u8) {
    b.extend_from_slice(&dst);
    b.extend_from_slice(&src);
    put16(b, ETHERTYPE_VLAN);
    put16(b, ((priority as u16) << 13) | VLAN_ID);
}

/// Who sent a notification: the CP's port, else the station it came from.
fn note_source(f: &WireFrame) -> [u8; 6] {
    match f.note.and_then(|n| n.cp_port) {
        Some(p) => port_mac(p),
        None if f.src != NO_NODE => station_mac(f.src),
        None => port_mac(f.port),
    }
}

/// The 8-byte CPID: the CP port's MAC and the engine's CPID.
fn cpid_bytes(f: &WireFrame) -> [u8; 8] {
    let mut c = [0u8; 8];
    if f.cpid != 0 {
        c[..6].copy_from_slice(&port_mac(f.cpid - 1));
        c[6..].copy_from_slice(&(f.cpid as u16).to_be_bytes());
    }
    c
}

fn saturate16(x: f64) -> i16 {
    x.round().clamp(i16::MIN as f64, i16::MAX as f64) as i16
}

fn pause(b: &mut Vec<u8>, f: &WireFrame) {
    b.extend_from_slice(&[0x01, 0x80, 0xC2, 0x00, 0x00, 0x01]);
    b.extend_from_slice(&port_mac(f.port));
    put16(b, ETHERTYPE_MAC_CONTROL);
    let quanta = f.seq as u16;
    if f.pfc || f.prio != 0 {
        let classes = if f.prio != 0 { f.prio } else { 1 << DATA_PRIORITY };
        put16(b, 0x0101);
        put16(b, classes as u16);
        for class in 0..8u8 {
            put16(b, if classes & (1 << class) != 0 { quanta } else { 0 });
        }
    } else {
        put16(b, 0x0001);
        put16(b, quanta);
    }
}

/// QCN's CNM (IEEE 802.1Q clause 33): to the sampled frame's source, from
/// the CP, the sampled frame's VLAN tag and CN-TAG, then the CNM PDU.
fn cnm(b: &mut Vec<u8>, f: &WireFrame) {
    ethernet(b, station_mac(f.dst), note_source(f), CONTROL_PRIORITY);
    put16(b, ETHERTYPE_CN_TAG);
    put16(b, cn_flow_id(f.about));
    put16(b, ETHERTYPE_CNM);
    let qfb = f.fields.fb.unwrap_or(0.0).clamp(0.0, 63.0) as u16;
    put16(b, qfb & 0x3F); // version 0 (4 bits), reserved (6 bits), quantized feedback (6 bits)
    b.extend_from_slice(&cpid_bytes(f));
    let n = f.note.unwrap_or_default();
    put16(b, saturate16(n.qoff / 64.0) as u16); // cnmQOffset, 64-octet units
    put16(b, saturate16(n.qdelta / 64.0) as u16); // cnmQDelta
    put16(b, (DATA_PRIORITY as u16) << 13); // encapsulated priority, as a TCI's PCP
    b.extend_from_slice(&station_mac(f.about)); // encapsulated destination MAC
                                                // The sampled frame's first bytes after its tags (its EtherType on), as
                                                // many as the frame has room for (at most 64).
    let sampled = WireFrame {
        kind: FrameKind::Data,
        len: u16::MAX,
        src: f.dst,
        dst: f.about,
        about: NO_NODE,
        seq: n.sampled_seq,
        cpid: 0,
        port: f.port,
        n_frames: None,
        note: None,
        pfc: false,
        prio: DATA_PRIORITY,
        ..*f
    };
    let (bytes, _) = encode(&sampled, 20 + 64);
    let msdu = &bytes[20.min(bytes.len())..];
    let room = (f.len as usize).saturating_sub(FCS_BYTES as usize + b.len() + 2);
    let take = msdu.len().min(64).min(room);
    put16(b, take as u16); // encapsulated MSDU length
    b.extend_from_slice(&msdu[..take]);
}

/// BCN message (cnsim's layout of the BCN proposal's fields): version and
/// reserved (2), CPID (8), Qoff and Qdelta (2 each, signed, 64-byte pages),
/// Fb (4, IEEE 754 binary32, pages), timestamp (4, 0), and the sampled
/// frame's destination MAC (6).
fn bcn(b: &mut Vec<u8>, f: &WireFrame) {
    ethernet(b, station_mac(f.dst), note_source(f), CONTROL_PRIORITY);
    put16(b, ETHERTYPE_BCN);
    put16(b, 0); // version 0, reserved
    b.extend_from_slice(&cpid_bytes(f));
    let n = f.note.unwrap_or_default();
    let stop = f.fields.note == NoteFormat::BcnStop;
    let (qoff, qdelta) = if stop { (0.0, 0.0) } else { (n.qoff, n.qdelta) };
    put16(b, saturate16(qoff) as u16);
    put16(b, saturate16(qdelta) as u16);
    put32(b, (f.fields.fb.unwrap_or(0.0) as f32).to_bits());
    put32(b, 0); // timestamp: not modelled
    b.extend_from_slice(&station_mac(f.about));
}

/// RC SEND opcode of data frame `f` within its flow's message.
fn rc_data_opcode(f: &WireFrame) -> u8 {
    match f.n_frames {
        Some(n) if n <= 1 => OP_SEND_ONLY,
        Some(_) if f.seq == 0 => OP_SEND_FIRST,
        Some(n) if f.seq + 1 >= n => OP_SEND_LAST,
        _ => OP_SEND_MIDDLE,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ecn {
    NotCapable,
    /// ECT(0), or CE when marked.
    Capable(bool),
}

/// A RoCEv2 packet: Ethernet, 802.1Q, [CN-TAG], IPv4, UDP 4791, BTH, then
/// AETH (acknowledgements), 16 reserved bytes (CNP) or the payload, and the
/// ICRC (when captured whole).
fn roce(f: &WireFrame, snaplen: u32, opcode: u8, psn: u32, priority: u8, ecn: Ecn) -> (Vec<u8>, u32) {
    // Acknowledgements and CNPs travel from the flow's receiver to its sender.
    let (from, to) = (f.src, f.dst);
    let (flow_src, flow_dst) = match f.kind {
        FrameKind::Data => (f.src, f.dst),
        FrameKind::Note => (f.dst, f.about),
        _ => (f.dst, f.src),
    };
    let qp = queue_pair(f.flow, flow_src, flow_dst);
    let mut b = Vec::with_capacity(128);
    let src_mac = if f.kind == FrameKind::Note {
        note_source(f)
    } else {
        station_mac(from)
    };
    ethernet(&mut b, station_mac(to), src_mac, priority);
    if f.kind == FrameKind::Data && f.fields.note == NoteFormat::Cnm {
        put16(&mut b, ETHERTYPE_CN_TAG);
        put16(&mut b, cn_flow_id(f.dst));
    }
    put16(&mut b, ETHERTYPE_IPV4);
    let l3 = b.len();
    let extra: usize = match (f.kind, opcode) {
        (_, OP_ACKNOWLEDGE) => 4, // AETH
        (_, OP_CNP) => 16,        // reserved
        // At least 16 bytes of payload: Wireshark's RPC-over-RDMA heuristic
        // reads the first 16 bytes of a SEND Last / Only and calls a shorter
        // one (a flow's last frame of a few simulated bytes) malformed.
        (FrameKind::Data, _) => 16,
        _ => 0,
    };
    // IPv4 20 + UDP 8 + BTH 12 + extra + ICRC 4, FCS 4.
    let min_wire = (l3 + 20 + 8 + 12 + extra + 4) as u32 + FCS_BYTES;
    let wire = (f.len as u32).max(MIN_FRAME).max(min_wire);
    let ip_len = wire - FCS_BYTES - l3 as u32;
    // IPv4
    let tos = match ecn {
        Ecn::NotCapable => 48 << 2, // DSCP CS6, like NICs send CNPs and ACKs
        Ecn::Capable(ce) => (26 << 2) | if ce { 0b11 } else { 0b10 },
    };
    b.extend_from_slice(&[0x45, tos]);
    put16(&mut b, ip_len as u16);
    put16(&mut b, 0); // identification
    put16(&mut b, 0x4000); // don't fragment
    b.extend_from_slice(&[64, 17, 0, 0]); // TTL, UDP, checksum (below)
    b.extend_from_slice(&station_ip(from));
    b.extend_from_slice(&station_ip(to));
    let sum = ipv4_checksum(&b[l3..l3 + 20]);
    b[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
    // UDP: the source port carries the flow's entropy; no checksum.
    put16(&mut b, 0xC000 | (qp & 0x3FFF) as u16);
    put16(&mut b, ROCEV2_UDP_PORT);
    put16(&mut b, (ip_len - 20) as u16);
    put16(&mut b, 0);
    // BTH
    b.push(opcode);
    b.push(0); // SE, M, pad count, transport header version
    put16(&mut b, 0xFFFF); // default partition key
    b.push(if opcode == OP_CNP { 0x40 } else { 0 }); // FECN, BECN (a CNP sets BECN), reserved
    b.extend_from_slice(&qp.to_be_bytes()[1..]);
    let ack_req = f.kind == FrameKind::Data;
    b.push(if ack_req { 0x80 } else { 0 });
    b.extend_from_slice(&(psn & 0xFF_FFFF).to_be_bytes()[1..]);
    if opcode == OP_ACKNOWLEDGE {
        b.push(if f.kind == FrameKind::Nack { AETH_NAK_SEQ } else { AETH_ACK });
        b.extend_from_slice(&[0, 0, 0]); // message sequence number: not modelled
    }
    let full = (wire - FCS_BYTES) as usize;
    if full <= snaplen as usize {
        b.resize(full - 4, 0);
        let icrc = icrc(&b[l3..]);
        b.extend_from_slice(&icrc.to_le_bytes());
    } else {
        b.resize(snaplen as usize, 0);
    }
    (b, wire)
}

pub const UET_UDP_PORT: u16 = 4793;
/// PDS types (UE 1.0): RUD request, ACK with congestion-control state, NACK.
pub const PDS_RUD_REQ: u8 = 2;
pub const PDS_ACK_CC: u8 = 8;
pub const PDS_NACK: u8 = 10;
/// The SES standard request header follows (the PDS prologue's next_hdr).
pub const PDS_NEXT_REQ_STD: u8 = 3;
/// PDS request flags: retransmission, ACK request; ACK / NACK flags: ECN
/// mark (M), retransmission.
pub const PDS_RETX: u8 = 0x10;
pub const PDS_AR: u8 = 0x08;
pub const PDS_M: u8 = 0x20;
/// NACK codes: trimmed, trimmed at the last hop.
pub const NACK_TRIMMED: u8 = 0x01;
pub const NACK_TRIMMED_LASTHOP: u8 = 0x02;
/// SES opcode of every data frame: WRITE.
pub const SES_WRITE: u8 = 0x01;
/// DSCPs (operator-chosen; UE 1.0 fixes none): trimmable data, trimmed
/// headers, control.
pub const DSCP_TRIMMABLE: u8 = 8;
pub const DSCP_TRIMMED: u8 = 16;
pub const DSCP_CONTROL: u8 = 46;

/// The PDS prologue: type (5 bits), next header (4), flags (7).
fn pds_prologue(b: &mut Vec<u8>, ty: u8, next: u8, flags: u8) {
    put16(b, ((ty as u16) << 11) | ((next as u16) << 7) | (flags as u16 & 0x7F));
}

/// A UET packet as UE 1.0 lays it out over UDP: Ethernet, 802.1Q, IPv4
/// (ECN on data), UDP (source port: the entropy, destination 4793), then
/// the PDS header: a RUD request and the SES standard header (data), a
/// trimmed packet's request and the first bytes of its SES, an ACK_CC (the
/// cumulative PSN, the PSN answered, 64 bits of SACK, the bytes received)
/// or a NACK (code trimmed / trimmed at the last hop). Wireshark's UET
/// dissector (`uet`) decodes UDP 4793; docs/uet.md says how to read it.
fn uet(f: &WireFrame, u: &crate::scheme::UetFields, snaplen: u32) -> (Vec<u8>, u32) {
    // Acknowledgements travel from the flow's receiver to its sender.
    let (from, to) = (f.src, f.dst);
    let pdc = |x: u32| ((x % 0xFFFF) + 1) as u16;
    let mut b = Vec::with_capacity(128);
    let priority = if f.kind == FrameKind::Data { f.prio } else { CONTROL_PRIORITY };
    ethernet(&mut b, station_mac(to), station_mac(from), priority);
    put16(&mut b, ETHERTYPE_IPV4);
    let l3 = b.len();
    let pds_len = match f.kind {
        FrameKind::Data => 12 + 44,
        FrameKind::Trimmed => 12,
        FrameKind::Ack => 32,
        _ => 16,
    };
    let min_wire = (l3 + 20 + 8 + pds_len) as u32 + FCS_BYTES;
    let wire = (f.len as u32).max(MIN_FRAME).max(min_wire);
    let ip_len = wire - FCS_BYTES - l3 as u32;
    let tos = match f.kind {
        FrameKind::Data => (DSCP_TRIMMABLE << 2) | if f.fields.ce { 0b11 } else { 0b10 },
        FrameKind::Trimmed => (DSCP_TRIMMED << 2) | if f.fields.ce { 0b11 } else { 0b10 },
        _ => DSCP_CONTROL << 2,
    };
    b.extend_from_slice(&[0x45, tos]);
    put16(&mut b, ip_len as u16);
    put16(&mut b, 0);
    put16(&mut b, 0x4000);
    b.extend_from_slice(&[64, 17, 0, 0]);
    b.extend_from_slice(&station_ip(from));
    b.extend_from_slice(&station_ip(to));
    let sum = ipv4_checksum(&b[l3..l3 + 20]);
    b[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
    // UDP: the entropy in the source port (kept above 49151, so that no
    // well-known protocol claims it), no checksum.
    put16(&mut b, 0xC000 | (f.entropy & 0x3FFF));
    put16(&mut b, UET_UDP_PORT);
    put16(&mut b, (ip_len - 20) as u16);
    put16(&mut b, 0);
    // The flow's two packet-delivery contexts: the sender's and the receiver's.
    let (own, peer) = match f.kind {
        FrameKind::Data | FrameKind::Trimmed => (pdc(2 * f.flow), pdc(2 * f.flow + 1)),
        _ => (pdc(2 * f.flow + 1), pdc(2 * f.flow)),
    };
    match f.kind {
        FrameKind::Data | FrameKind::Trimmed => {
            let flags = if u.rtx { PDS_RETX } else { 0 } | if u.ar { PDS_AR } else { 0 };
            pds_prologue(&mut b, PDS_RUD_REQ, PDS_NEXT_REQ_STD, flags);
            put16(&mut b, 0); // clear PSN offset: not modelled
            put32(&mut b, f.seq);
            put16(&mut b, own);
            put16(&mut b, peer);
            // SES standard request: WRITE, the flow's message.
            let first = f.seq == 0;
            let last = f.n_frames.is_some_and(|n| f.seq + 1 >= n);
            b.push(SES_WRITE);
            b.push(0x08 | if last { 0x02 } else { 0 } | if first { 0x01 } else { 0 }); // REL, EOM, SOM
            put16(&mut b, (f.flow & 0xFFFF) as u16); // message id
            put32(&mut b, 1); // job 1
            b.resize(b.len() + 36, 0); // the rest of the 44 bytes: not modelled
        }
        FrameKind::Ack => {
            let flags = if f.fields.ce { PDS_M } else { 0 } | if u.rtx { PDS_RETX } else { 0 };
            pds_prologue(&mut b, PDS_ACK_CC, 0, flags);
            let cack = f.seq.wrapping_sub(1); // inclusive: the last PSN of the cumulative point
            put16(&mut b, f.cpid.wrapping_sub(cack) as u16); // the PSN answered
            put32(&mut b, cack);
            put16(&mut b, own);
            put16(&mut b, peer);
            b.push(0); // cc_type 0: NSCC
            b.push(0); // mpr
            put16(&mut b, u.sack_base.wrapping_sub(cack) as u16);
            b.extend_from_slice(&u.sack_bits.to_be_bytes());
            put16(&mut b, 0); // service time: not modelled
            b.push(0);
            b.extend_from_slice(&((u.recvd_bytes & 0xFF_FFFF) as u32).to_be_bytes()[1..]);
            put16(&mut b, 0); // out-of-order count: not modelled
        }
        _ => {
            let flags = if f.fields.ce { PDS_M } else { 0 } | if u.rtx { PDS_RETX } else { 0 };
            pds_prologue(&mut b, PDS_NACK, 0, flags);
            b.push(if u.last_hop { NACK_TRIMMED_LASTHOP } else { NACK_TRIMMED });
            b.push(0);
            put32(&mut b, f.seq);
            put16(&mut b, own);
            put16(&mut b, peer);
            put32(&mut b, 0);
        }
    }
    let full = ((wire - FCS_BYTES) as usize).min(snaplen as usize);
    b.resize(full.max(b.len().min(snaplen as usize)), 0);
    b.truncate(snaplen as usize);
    (b, wire)
}

/// The IPv4 header checksum of `h` (its checksum field zero).
pub fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// RoCEv2's invariant CRC of an IPv4 packet `ip` (its ICRC not included):
/// CRC-32 over eight bytes of ones and the packet with the fields routers
/// may change (type of service, TTL, IP checksum, UDP checksum, the BTH's
/// FECN / BECN byte) set to ones. Stored least significant byte first.
pub fn icrc(ip: &[u8]) -> u32 {
    let mut masked = ip.to_vec();
    masked[1] = 0xFF; // type of service
    masked[8] = 0xFF; // TTL
    masked[10] = 0xFF;
    masked[11] = 0xFF; // header checksum
    masked[26] = 0xFF;
    masked[27] = 0xFF; // UDP checksum
    masked[28 + 4] = 0xFF; // BTH: FECN, BECN, reserved
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xFF; 8]);
    h.update(&masked);
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: FrameKind) -> WireFrame {
        WireFrame {
            kind,
            len: 64,
            src: 1,
            dst: 2,
            about: NO_NODE,
            flow: NO_FLOW,
            seq: 0,
            cpid: 0,
            fields: ExtFields::default(),
            port: 7,
            n_frames: None,
            note: None,
            pfc: false,
            prio: if kind == FrameKind::Pause { 0 } else { DATA_PRIORITY },
            entropy: 0,
        }
    }

    /// UET frames over UDP 4793: the entropy in the source port, the PDS
    /// header's type, flags and PSNs where UE 1.0 puts them.
    #[test]
    fn uet_frames_are_pds_over_udp_4793() {
        use crate::scheme::UetFields;
        let mut f = frame(FrameKind::Data);
        f.len = 4150;
        f.flow = 3;
        f.seq = 5;
        f.entropy = 0x1234;
        f.n_frames = Some(490);
        f.fields.uet = Some(UetFields {
            ar: true,
            ..UetFields::default()
        });
        let (b, wire) = encode(&f, 256);
        assert_eq!(wire, 4150);
        let l3 = 18;
        assert_eq!(b[l3 + 1] >> 2, DSCP_TRIMMABLE);
        assert_eq!(b[l3 + 1] & 3, 0b10, "ECT(0)");
        let udp = l3 + 20;
        assert_eq!(&b[udp..udp + 4], &[0xD2, 0x34, 0x12, 0xB9], "0xC000 | entropy, 4793");
        let pds = udp + 8;
        assert_eq!(b[pds] >> 3, PDS_RUD_REQ);
        assert_eq!(b[pds + 1] & 0x7F, PDS_AR);
        assert_eq!(&b[pds + 4..pds + 8], &5u32.to_be_bytes());
        assert_eq!(b[pds + 12], SES_WRITE);
        // A NACK of a frame trimmed at the last hop, and an ACK's SACK.
        let mut n = frame(FrameKind::Nack);
        n.seq = 77;
        n.fields.uet = Some(UetFields {
            last_hop: true,
            ..UetFields::default()
        });
        let (b, wire) = encode(&n, 256);
        assert_eq!(wire, 18 + 20 + 8 + 16 + 4);
        assert_eq!(b[pds] >> 3, PDS_NACK);
        assert_eq!(b[pds + 2], NACK_TRIMMED_LASTHOP);
        assert_eq!(&b[pds + 4..pds + 8], &77u32.to_be_bytes());
        let mut a = frame(FrameKind::Ack);
        a.seq = 10;
        a.cpid = 12;
        a.fields.uet = Some(UetFields {
            sack_base: 11,
            sack_bits: 0b101,
            recvd_bytes: 40_000,
            ..UetFields::default()
        });
        let (b, _) = encode(&a, 256);
        assert_eq!(b[pds] >> 3, PDS_ACK_CC);
        assert_eq!(&b[pds + 2..pds + 4], &3u16.to_be_bytes(), "PSN 12 answered, cumulative 9");
        assert_eq!(&b[pds + 4..pds + 8], &9u32.to_be_bytes());
        assert_eq!(&b[pds + 14..pds + 16], &2u16.to_be_bytes(), "SACK from PSN 11");
        assert_eq!(&b[pds + 16..pds + 24], &0b101u64.to_be_bytes());
        assert_eq!(&b[pds + 27..pds + 30], &[0x00, 0x9C, 0x40], "40,000 bytes received");
        let mut t = frame(FrameKind::Trimmed);
        t.fields.uet = Some(UetFields::default());
        let (b, wire) = encode(&t, 256);
        assert_eq!(wire, 64);
        assert_eq!(b[l3 + 1] >> 2, DSCP_TRIMMED);
    }

    #[test]
    fn a_pause_frame_is_mac_control_with_its_quanta_and_the_simulated_length() {
        let mut f = frame(FrameKind::Pause);
        f.seq = 0xFFFF;
        let (b, wire) = encode(&f, 128);
        assert_eq!(wire, 64);
        assert_eq!(b.len(), 60, "the FCS is not captured");
        assert_eq!(&b[..6], &[0x01, 0x80, 0xC2, 0, 0, 1]);
        assert_eq!(&b[6..12], &port_mac(7));
        assert_eq!(&b[12..18], &[0x88, 0x08, 0x00, 0x01, 0xFF, 0xFF]);
        f.pfc = true;
        f.seq = 300;
        let (b, _) = encode(&f, 128);
        assert_eq!(&b[14..18], &[0x01, 0x01, 0x00, 0x08], "opcode 0x0101, class 3 enabled");
        assert_eq!(&b[18 + 6..18 + 8], &300u16.to_be_bytes(), "class 3's time");
        assert!(b[18..18 + 6].iter().chain(&b[26..34]).all(|&x| x == 0));
        // A PFC frame of cnsim's own (pause.mode = "pfc"): its vector, each
        // named class's time, the others 0.
        f.prio = 1 << 0 | 1 << 4;
        let (b, _) = encode(&f, 128);
        assert_eq!(&b[14..18], &[0x01, 0x01, 0x00, 0x11], "classes 0 and 4 enabled");
        let times: Vec<u16> = (0..8).map(|c| u16::from_be_bytes([b[18 + 2 * c], b[19 + 2 * c]])).collect();
        assert_eq!(times, [300, 0, 0, 0, 300, 0, 0, 0]);
    }

    #[test]
    fn open_loop_data_is_tagged_ethernet_cut_at_the_snaplen() {
        let mut f = frame(FrameKind::Data);
        f.len = 1500;
        let (b, wire) = encode(&f, 100);
        assert_eq!((b.len(), wire), (100, 1500));
        assert_eq!(&b[12..18], &[0x81, 0x00, 0x60, 0x01, 0x88, 0xB5]);
        f.fields.note = NoteFormat::Cnm;
        let (b, _) = encode(&f, 100);
        assert_eq!(
            &b[16..22],
            &[0x22, 0xE9, 0x00, 0x03, 0x88, 0xB5],
            "CN-TAG with the flow id of destination 2"
        );
    }

    #[test]
    fn a_roce_ack_has_a_valid_ip_checksum_and_its_real_length() {
        let mut f = frame(FrameKind::Ack);
        f.flow = 5;
        f.seq = 10;
        let (b, wire) = encode(&f, 128);
        assert_eq!(wire, 70, "Ethernet + 802.1Q + IPv4 + UDP + BTH + AETH + ICRC + FCS");
        assert_eq!(b.len(), 66);
        assert_eq!(ipv4_checksum(&b[18..38]), 0);
        assert_eq!(b[18 + 28], OP_ACKNOWLEDGE);
        assert_eq!(&b[18 + 28 + 9..18 + 28 + 12], &[0, 0, 9], "PSN of the last frame received");
        assert_eq!(b[18 + 40], AETH_ACK);
    }

    /// Issue 37 item 12: a RoCEv2 data frame shorter than its headers (a
    /// flow's last few bytes) is captured at 82 bytes, 16 bytes of payload
    /// after the BTH (a shorter SEND Last reads as malformed in Wireshark).
    #[test]
    fn a_short_roce_data_frame_keeps_a_word_of_payload() {
        let mut f = frame(FrameKind::Data);
        f.flow = 5;
        f.len = 16;
        f.seq = 9;
        f.n_frames = Some(10);
        let (b, wire) = encode(&f, 65535);
        assert_eq!(wire, 82);
        assert_eq!(b.len(), 78);
        assert_eq!(b[18 + 28], OP_SEND_LAST);
        assert_eq!(u16::from_be_bytes([b[20], b[21]]), 60, "IPv4 length: 20 + 8 + 12 + 16 + 4");
        assert_eq!(ipv4_checksum(&b[18..38]), 0);
    }

    /// The ICRC of a RoCEv2 packet whose value scapy computes the same way
    /// (`scapy.contrib.roce.BTH.compute_icrc`, checked by the Python tests
    /// on whole captures): here, that masking the variant fields makes the
    /// CRC independent of them.
    #[test]
    fn the_icrc_ignores_the_fields_routers_change() {
        let mut f = frame(FrameKind::Note);
        f.fields.note = NoteFormat::Cnp;
        f.flow = 3;
        let (a, wire) = encode(&f, 128);
        assert_eq!(wire, 82);
        let mut ip = a[18..a.len() - 4].to_vec();
        let c = icrc(&ip);
        ip[8] = 1; // TTL
        ip[32] = 0x80; // FECN
        assert_eq!(icrc(&ip), c);
        ip[30] ^= 1; // the destination QP is covered
        assert_ne!(icrc(&ip), c);
    }
}
