//! A bounded reader and a writer for the non-flexible wire encoding of the
//! legacy request versions (fixed-width integers, int16-length strings,
//! int32-length bytes and arrays). Every array count is checked against the
//! bytes left before anything is allocated for it, so a request costs at
//! most a small multiple of its frame, as `decode_bounds` promises for the
//! versions the codec crate decodes.

use bytes::{BufMut, BytesMut};

/// Why a legacy request could not be read.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum LegacyDecodeError {
    #[error("request ends at byte {at}: {what} needs {needed} more")]
    Truncated {
        at: usize,
        what: &'static str,
        needed: usize,
    },
    #[error("{what}: negative length {len}")]
    NegativeLength { what: &'static str, len: i32 },
    #[error("{what}: {count} elements claimed but only {left} bytes remain")]
    CountBeyondFrame {
        what: &'static str,
        count: i32,
        left: usize,
    },
    #[error("{what} is not UTF-8")]
    NotUtf8 { what: &'static str },
    #[error("{0} bytes after the request's last field")]
    Trailing(usize),
}

pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], LegacyDecodeError> {
        let left = self.buf.len() - self.pos;
        if n > left {
            return Err(LegacyDecodeError::Truncated {
                at: self.pos,
                what,
                needed: n - left,
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn i8(&mut self, what: &'static str) -> Result<i8, LegacyDecodeError> {
        Ok(self.take(1, what)?[0] as i8)
    }
    pub fn i16(&mut self, what: &'static str) -> Result<i16, LegacyDecodeError> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    pub fn i32(&mut self, what: &'static str) -> Result<i32, LegacyDecodeError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn i64(&mut self, what: &'static str) -> Result<i64, LegacyDecodeError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    pub fn nullable_string(
        &mut self,
        what: &'static str,
    ) -> Result<Option<String>, LegacyDecodeError> {
        let len = self.i16(what)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(LegacyDecodeError::NegativeLength {
                what,
                len: len as i32,
            });
        }
        let b = self.take(len as usize, what)?;
        std::str::from_utf8(b)
            .map(|s| Some(s.to_string()))
            .map_err(|_| LegacyDecodeError::NotUtf8 { what })
    }

    pub fn string(&mut self, what: &'static str) -> Result<String, LegacyDecodeError> {
        match self.nullable_string(what)? {
            Some(s) => Ok(s),
            None => Err(LegacyDecodeError::NegativeLength { what, len: -1 }),
        }
    }

    /// Int32-length bytes; -1 is null.
    pub fn nullable_bytes(
        &mut self,
        what: &'static str,
    ) -> Result<Option<&'a [u8]>, LegacyDecodeError> {
        let len = self.i32(what)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(LegacyDecodeError::NegativeLength { what, len });
        }
        self.take(len as usize, what).map(Some)
    }

    /// An array's count, each element taking at least `min_element_bytes`
    /// on the wire: a count the remaining bytes cannot hold is refused
    /// before anything is sized from it.
    pub fn array_len(
        &mut self,
        what: &'static str,
        min_element_bytes: usize,
    ) -> Result<usize, LegacyDecodeError> {
        let count = self.i32(what)?;
        if count < 0 {
            return Err(LegacyDecodeError::NegativeLength { what, len: count });
        }
        let left = self.buf.len() - self.pos;
        if (count as usize).saturating_mul(min_element_bytes.max(1)) > left {
            return Err(LegacyDecodeError::CountBeyondFrame { what, count, left });
        }
        Ok(count as usize)
    }

    /// Reads `count` elements of an array whose count was just read.
    pub fn elements<T>(
        &mut self,
        what: &'static str,
        min_element_bytes: usize,
        mut element: impl FnMut(&mut Self) -> Result<T, LegacyDecodeError>,
    ) -> Result<Vec<T>, LegacyDecodeError> {
        let n = self.array_len(what, min_element_bytes)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(element(self)?);
        }
        Ok(out)
    }

    /// The request must end here.
    pub fn finish(&self) -> Result<(), LegacyDecodeError> {
        match self.buf.len() - self.pos {
            0 => Ok(()),
            n => Err(LegacyDecodeError::Trailing(n)),
        }
    }
}

/// Writes a legacy response body.
#[derive(Default)]
pub struct Writer {
    pub buf: BytesMut,
}

impl Writer {
    pub fn i8(&mut self, v: i8) -> &mut Self {
        self.buf.put_i8(v);
        self
    }
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.buf.put_i8(v as i8);
        self
    }
    pub fn i16(&mut self, v: i16) -> &mut Self {
        self.buf.put_i16(v);
        self
    }
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.put_i32(v);
        self
    }
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.put_i64(v);
        self
    }
    pub fn nullable_string(&mut self, v: Option<&str>) -> &mut Self {
        match v {
            None => self.buf.put_i16(-1),
            Some(s) => {
                let b = &s.as_bytes()[..s.len().min(i16::MAX as usize)];
                self.buf.put_i16(b.len() as i16);
                self.buf.put_slice(b);
            }
        }
        self
    }
    pub fn string(&mut self, v: &str) -> &mut Self {
        self.nullable_string(Some(v))
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.buf.put_i32(v.len() as i32);
        self.buf.put_slice(v);
        self
    }
    pub fn array_len(&mut self, n: usize) -> &mut Self {
        self.buf.put_i32(n as i32);
        self
    }

    /// The `topics [name, partitions [...]]` shape most responses share:
    /// `partition` writes one partition's fields.
    pub fn topics<P>(
        &mut self,
        topics: &[(String, Vec<P>)],
        mut partition: impl FnMut(&mut Self, &str, &P),
    ) -> &mut Self {
        self.array_len(topics.len());
        for (name, partitions) in topics {
            self.string(name).array_len(partitions.len());
            for p in partitions {
                partition(self, name, p);
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_beyond_the_frame_are_refused_before_allocation() {
        let mut body = Vec::new();
        body.extend_from_slice(&i32::MAX.to_be_bytes());
        body.extend_from_slice(&[0; 16]);
        let mut r = Reader::new(&body);
        let e = r.elements("topics", 6, |r| r.string("name")).unwrap_err();
        assert!(
            matches!(
                e,
                LegacyDecodeError::CountBeyondFrame {
                    count: i32::MAX,
                    left: 16,
                    ..
                }
            ),
            "{e:?}"
        );
        let mut r = Reader::new(&[0xff, 0xfe]);
        assert!(matches!(
            r.nullable_string("s"),
            Err(LegacyDecodeError::NegativeLength { len: -2, .. })
        ));
        let mut r = Reader::new(&[0, 5, b'a']);
        assert!(matches!(
            r.string("s"),
            Err(LegacyDecodeError::Truncated { needed: 4, .. })
        ));
    }

    #[test]
    fn round_trip() {
        let mut w = Writer::default();
        w.string("topic")
            .i32(3)
            .i64(-7)
            .nullable_string(None)
            .bytes(b"xy");
        let b = w.buf.freeze();
        let mut r = Reader::new(&b);
        assert_eq!(r.string("t").unwrap(), "topic");
        assert_eq!(r.i32("p").unwrap(), 3);
        assert_eq!(r.i64("o").unwrap(), -7);
        assert_eq!(r.nullable_string("m").unwrap(), None);
        assert_eq!(r.nullable_bytes("b").unwrap(), Some(&b"xy"[..]));
        r.finish().unwrap();
    }
}
