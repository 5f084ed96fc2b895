-- Wireshark dissectors for the congestion-management frames of cnsim's
-- captures that Wireshark does not decode itself (docs/looking-at-frames.md):
--
--   cn-tag  IEEE 802.1Qau CN-TAG (EtherType 0x22E9): a 2-byte flow id, then
--           the frame's own EtherType (dissected as usual after it);
--   cnm     IEEE 802.1Qau Congestion Notification Message (EtherType 0x22E7);
--   bcn     BCN message (EtherType 0x8904), the fields of the BCN proposal as
--           cnsim lays them out.
--
-- Use:  wireshark -X lua_script:docs/wireshark/cnsim.lua FILE.pcapng
--       tshark -X lua_script:docs/wireshark/cnsim.lua -r FILE -Y cnm
-- or copy this file into Wireshark's personal Lua plugins folder
-- (Help > About Wireshark > Folders).

local ethertype = DissectorTable.get("ethertype")
local data = Dissector.get("data")

-- CN-TAG --------------------------------------------------------------------
local cn_tag = Proto("cn-tag", "IEEE 802.1Qau Congestion Notification Tag")
local tag_flowid = ProtoField.uint16("cn-tag.flowid", "Flow ID", base.DEC)
local tag_type = ProtoField.uint16("cn-tag.etype", "Type", base.HEX)
cn_tag.fields = { tag_flowid, tag_type }

function cn_tag.dissector(tvb, pinfo, tree)
    if tvb:len() < 4 then return 0 end
    local t = tree:add(cn_tag, tvb(0, 4))
    t:add(tag_flowid, tvb(0, 2))
    t:add(tag_type, tvb(2, 2))
    t:append_text(", Flow ID: " .. tvb(0, 2):uint())
    pinfo.cols.protocol = "CN-TAG"
    pinfo.cols.info = "CN-TAG flow " .. tvb(0, 2):uint()
    local rest = tvb(4):tvb()
    if not ethertype:try(tvb(2, 2):uint(), rest, pinfo, tree) then
        data:call(rest, pinfo, tree)
    end
    return tvb:len()
end

-- CNM -------------------------------------------------------------------------
local cnm = Proto("cnm", "IEEE 802.1Qau Congestion Notification Message")
local cnm_version = ProtoField.uint16("cnm.version", "Version", base.DEC, nil, 0xF000)
local cnm_reserved = ProtoField.uint16("cnm.reserved", "ReservedV", base.DEC, nil, 0x0FC0)
local cnm_qntzfb = ProtoField.uint16("cnm.qntzfb", "Quantized Feedback", base.DEC, nil, 0x003F)
local cnm_cpid = ProtoField.bytes("cnm.cpid", "Congestion Point Identifier")
local cnm_qoffset = ProtoField.int16("cnm.qoffset", "cnmQOffset (64-octet units)", base.DEC)
local cnm_qdelta = ProtoField.int16("cnm.qdelta", "cnmQDelta (64-octet units)", base.DEC)
local cnm_prio = ProtoField.uint16("cnm.encap_priority", "Encapsulated priority", base.DEC, nil, 0xE000)
local cnm_da = ProtoField.ether("cnm.encap_da", "Encapsulated destination MAC address")
local cnm_len = ProtoField.uint16("cnm.encap_len", "Encapsulated MSDU length", base.DEC)
local cnm_msdu = ProtoField.bytes("cnm.encap_msdu", "Encapsulated MSDU")
cnm.fields = { cnm_version, cnm_reserved, cnm_qntzfb, cnm_cpid, cnm_qoffset, cnm_qdelta, cnm_prio, cnm_da, cnm_len, cnm_msdu }

function cnm.dissector(tvb, pinfo, tree)
    if tvb:len() < 24 then return 0 end
    pinfo.cols.protocol = "CNM"
    local n = math.min(tvb(22, 2):uint(), tvb:len() - 24)
    local t = tree:add(cnm, tvb(0, 24 + n))
    t:add(cnm_version, tvb(0, 2))
    t:add(cnm_reserved, tvb(0, 2))
    t:add(cnm_qntzfb, tvb(0, 2))
    t:add(cnm_cpid, tvb(2, 8))
    t:add(cnm_qoffset, tvb(10, 2))
    t:add(cnm_qdelta, tvb(12, 2))
    t:add(cnm_prio, tvb(14, 2))
    t:add(cnm_da, tvb(16, 6))
    t:add(cnm_len, tvb(22, 2))
    if n > 0 then t:add(cnm_msdu, tvb(24, n)) end
    pinfo.cols.info = string.format("CNM qntzFb=%d cnmQOffset=%d cnmQDelta=%d",
        bit.band(tvb(0, 2):uint(), 0x3F), tvb(10, 2):int(), tvb(12, 2):int())
    return 24 + n
end

-- BCN -------------------------------------------------------------------------
local bcn = Proto("bcn", "Backward Congestion Notification (cnsim layout of the BCN proposal)")
local bcn_version = ProtoField.uint16("bcn.version", "Version", base.DEC, nil, 0xF000)
local bcn_cpid = ProtoField.bytes("bcn.cpid", "CPID")
local bcn_qoff = ProtoField.int16("bcn.qoff", "Qoff (64-byte pages)", base.DEC)
local bcn_qdelta = ProtoField.int16("bcn.qdelta", "Qdelta (64-byte pages)", base.DEC)
local bcn_fb = ProtoField.float("bcn.fb", "Fb (64-byte pages)")
local bcn_ts = ProtoField.uint32("bcn.timestamp", "Timestamp", base.DEC)
local bcn_da = ProtoField.ether("bcn.encap_da", "Sampled frame's destination MAC address")
bcn.fields = { bcn_version, bcn_cpid, bcn_qoff, bcn_qdelta, bcn_fb, bcn_ts, bcn_da }

function bcn.dissector(tvb, pinfo, tree)
    if tvb:len() < 28 then return 0 end
    pinfo.cols.protocol = "BCN"
    local t = tree:add(bcn, tvb(0, 28))
    t:add(bcn_version, tvb(0, 2))
    t:add(bcn_cpid, tvb(2, 8))
    t:add(bcn_qoff, tvb(10, 2))
    t:add(bcn_qdelta, tvb(12, 2))
    t:add(bcn_fb, tvb(14, 4))
    t:add(bcn_ts, tvb(18, 4))
    t:add(bcn_da, tvb(22, 6))
    local stop = tvb(10, 2):int() == 0 and tvb(12, 2):int() == 0 and tvb(14, 4):float() == 0
    pinfo.cols.info = stop and "BCN(0,0) stop"
        or string.format("BCN Fb=%.1f Qoff=%d Qdelta=%d", tvb(14, 4):float(), tvb(10, 2):int(), tvb(12, 2):int())
    return 28
end

ethertype:add(0x22E9, cn_tag)
ethertype:add(0x22E7, cnm)
ethertype:add(0x8904, bcn)
