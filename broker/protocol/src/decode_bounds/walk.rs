//! Walks an encoded message along its layout without decoding it: every
//! length and count is checked against the bytes that remain before the
//! codec is allowed to size anything from it, and the memory the codec's
//! decode will allocate is added up.

use thiserror::Error;

use super::schema::{Field, Message, Type};

/// Memory a decoded unknown tagged field costs (its map entry), beyond the
/// bytes it shares with the frame.
const TAGGED_ENTRY_COST: usize = 64;

/// Why a message was refused before decoding.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BoundsError {
    #[error("{field}: message ends {needed} bytes early")]
    Truncated { field: &'static str, needed: usize },
    #[error("{field}: negative length {len}")]
    NegativeLength { field: &'static str, len: i64 },
    #[error("{field}: length {len} exceeds the {remaining} bytes left in the request")]
    LengthExceedsFrame {
        field: &'static str,
        len: u64,
        remaining: usize,
    },
    #[error("{field}: tagged field of {size} bytes was {used} bytes as encoded")]
    TaggedFieldSize {
        field: &'static str,
        size: usize,
        used: usize,
    },
    #[error("{message} has no version {version}")]
    UnknownVersion { message: &'static str, version: i16 },
    #[error("decoding would allocate {cost} bytes, over the limit of {limit} for a {frame}-byte request")]
    TooCostly {
        cost: usize,
        limit: usize,
        frame: usize,
    },
}

/// What a walk found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walked {
    /// Bytes of the message the layout covers (the codec stops there too).
    pub consumed: usize,
    /// Memory decoding allocates for arrays and tagged fields; strings and
    /// bytes are slices of the frame and cost nothing more.
    pub decode_cost: usize,
}

/// Checks `buf` as version `version` of `message`.
pub fn walk(message: &Message, version: i16, buf: &[u8]) -> Result<Walked, BoundsError> {
    if !message.valid.contains(version) {
        return Err(BoundsError::UnknownVersion {
            message: message.name,
            version,
        });
    }
    let mut w = Walker {
        buf,
        pos: 0,
        version,
        flexible: version >= message.flexible_from,
        cost: 0,
    };
    w.fields(message.fields, message.name)?;
    Ok(Walked {
        consumed: w.pos,
        decode_cost: w.cost,
    })
}

struct Walker<'a> {
    buf: &'a [u8],
    pos: usize,
    version: i16,
    flexible: bool,
    cost: usize,
}

impl<'a> Walker<'a> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], BoundsError> {
        if self.remaining() < n {
            return Err(BoundsError::Truncated {
                field,
                needed: n - self.remaining(),
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn int(&mut self, n: usize, field: &'static str) -> Result<i64, BoundsError> {
        let b = self.take(n, field)?;
        Ok(b.iter().fold(0u64, |acc, x| (acc << 8) | *x as u64) as i64)
    }

    /// An unsigned varint as the codec reads it: at most five bytes, the
    /// fifth one's continuation bit ignored.
    fn uvarint(&mut self, field: &'static str) -> Result<u32, BoundsError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.take(1, field)?[0] as u32;
            value |= (b & 0x7f) << (i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    /// A length (or count) of something that needs at least `len` more
    /// bytes; `None` is null.
    fn length(&mut self, width: usize, field: &'static str) -> Result<Option<u64>, BoundsError> {
        let len = if self.flexible {
            match self.uvarint(field)? {
                0 => return Ok(None),
                n => (n - 1) as u64,
            }
        } else {
            let n = match width {
                2 => self.int(2, field)? as i16 as i64,
                _ => self.int(4, field)? as i32 as i64,
            };
            if n == -1 {
                return Ok(None);
            }
            if n < 0 {
                return Err(BoundsError::NegativeLength { field, len: n });
            }
            n as u64
        };
        if len > self.remaining() as u64 {
            return Err(BoundsError::LengthExceedsFrame {
                field,
                len,
                remaining: self.remaining(),
            });
        }
        Ok(Some(len))
    }

    fn fields(&mut self, fields: &'static [Field], name: &'static str) -> Result<(), BoundsError> {
        for f in fields {
            if f.in_order(self.version) {
                self.value(&f.ty, f.name)?;
            }
        }
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint(name)?;
        for _ in 0..count {
            let tag = self.uvarint(name)?;
            let size = self.uvarint(name)? as usize;
            if size > self.remaining() {
                return Err(BoundsError::LengthExceedsFrame {
                    field: name,
                    len: size as u64,
                    remaining: self.remaining(),
                });
            }
            match fields.iter().find(|f| f.tag_at(self.version) == Some(tag)) {
                Some(f) => {
                    // The codec decodes a known tagged field from where it
                    // starts, whatever its size says; the walk only agrees
                    // with it where the two are the same.
                    let start = self.pos;
                    let end = start + size;
                    let whole = self.buf;
                    self.buf = &whole[..end];
                    let r = self.value(&f.ty, f.name);
                    self.buf = whole;
                    r?;
                    if self.pos != end {
                        return Err(BoundsError::TaggedFieldSize {
                            field: f.name,
                            size,
                            used: self.pos - start,
                        });
                    }
                }
                None => {
                    self.pos += size;
                    self.cost += TAGGED_ENTRY_COST;
                }
            }
        }
        Ok(())
    }

    fn value(&mut self, ty: &'static Type, field: &'static str) -> Result<(), BoundsError> {
        match ty {
            Type::Bool | Type::I8 => self.take(1, field).map(drop),
            Type::I16 | Type::U16 => self.take(2, field).map(drop),
            Type::I32 => self.take(4, field).map(drop),
            Type::I64 | Type::F64 => self.take(8, field).map(drop),
            Type::Uuid => self.take(16, field).map(drop),
            Type::Str => {
                if let Some(n) = self.length(2, field)? {
                    self.take(n as usize, field)?;
                }
                Ok(())
            }
            Type::Bytes | Type::Records => {
                if let Some(n) = self.length(4, field)? {
                    self.take(n as usize, field)?;
                }
                Ok(())
            }
            Type::Array(elem_size, elem) => {
                let Some(n) = self.length(4, field)? else {
                    return Ok(());
                };
                // Checked against the bytes left above, so the product
                // cannot overflow on any target with 64-bit usize.
                self.cost = self
                    .cost
                    .saturating_add((n as usize).saturating_mul(*elem_size));
                for _ in 0..n {
                    let before = self.pos;
                    self.value(elem, field)?;
                    if self.pos == before {
                        // An element that takes no bytes (a struct with no
                        // fields in this version): the count alone would be
                        // all that bounds the codec's allocation.
                        return Err(BoundsError::LengthExceedsFrame {
                            field,
                            len: n,
                            remaining: self.remaining(),
                        });
                    }
                }
                Ok(())
            }
            Type::Struct(fields) => self.fields(fields, field),
            Type::OptStruct(nullable, fields) => {
                if nullable.contains(self.version) && self.int(1, field)? != 1 {
                    return Ok(());
                }
                self.fields(fields, field)
            }
        }
    }
}
