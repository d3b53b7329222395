//! The few fields of a Kafka record batch (v2) header the read path needs
//! to cut whole batches out of a byte range: base offset, length, last
//! offset delta and max timestamp. Batches are never decoded or re-encoded.

/// Bytes before a batch's `length` field ends (base offset + length).
pub const LOG_OVERHEAD: usize = 12;
/// Size of the v2 batch header.
pub const HEADER_LEN: usize = 61;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// Whole batch size in bytes.
    pub size: usize,
}

/// Parses the frame at the start of `buf`. `Ok(None)`: `buf` ends before
/// the header does; `Err`: the bytes cannot be a batch.
pub fn parse(buf: &[u8]) -> Result<Option<Frame>, String> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let be64 = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[at..at + 8]);
        i64::from_be_bytes(b)
    };
    let be32 = |at: usize| i32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
    let length = be32(8);
    if length < (HEADER_LEN - LOG_OVERHEAD) as i32 {
        return Err(format!("invalid batch length {length}"));
    }
    if buf[16] != 2 {
        return Err(format!("unsupported record batch magic {}", buf[16]));
    }
    let base_offset = be64(0);
    Ok(Some(Frame {
        base_offset,
        last_offset: base_offset + be32(23) as i64,
        max_timestamp: be64(35),
        size: LOG_OVERHEAD + length as usize,
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A syntactically valid batch header followed by `body` bytes.
    pub fn batch(base: i64, last_delta: i32, max_ts: i64, body: usize) -> Vec<u8> {
        let mut b = vec![0u8; HEADER_LEN + body];
        b[0..8].copy_from_slice(&base.to_be_bytes());
        b[8..12].copy_from_slice(&((HEADER_LEN + body - LOG_OVERHEAD) as i32).to_be_bytes());
        b[16] = 2;
        b[23..27].copy_from_slice(&last_delta.to_be_bytes());
        b[35..43].copy_from_slice(&max_ts.to_be_bytes());
        b
    }

    #[test]
    fn parses_and_rejects() {
        let b = batch(100, 4, 7, 10);
        assert_eq!(
            parse(&b).unwrap(),
            Some(Frame {
                base_offset: 100,
                last_offset: 104,
                max_timestamp: 7,
                size: 71
            })
        );
        assert_eq!(parse(&b[..20]).unwrap(), None);
        let mut bad = b.clone();
        bad[16] = 1;
        assert!(parse(&bad).is_err());
    }
}
