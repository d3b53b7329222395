//! Random well-formed encodings of a layout, for tests and fuzz seeds: what
//! a conforming client could send. Values are non-null and known tagged
//! fields carry non-default values, so the codec re-encodes exactly what it
//! decoded.

use super::schema::{Field, Message, Type};

/// A small deterministic generator (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One encoding of `message` at `version`.
pub fn sample(message: &Message, version: i16, rng: &mut Rng) -> Vec<u8> {
    let mut s = Sampler {
        out: Vec::new(),
        version,
        flexible: version >= message.flexible_from,
        rng,
        depth: 0,
    };
    s.fields(message.fields);
    s.out
}

struct Sampler<'r> {
    out: Vec<u8>,
    version: i16,
    flexible: bool,
    rng: &'r mut Rng,
    depth: usize,
}

impl Sampler<'_> {
    fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    fn length(&mut self, n: usize, width: usize) {
        if self.flexible {
            self.uvarint(n as u32 + 1);
        } else if width == 2 {
            self.out.extend_from_slice(&(n as i16).to_be_bytes());
        } else {
            self.out.extend_from_slice(&(n as i32).to_be_bytes());
        }
    }

    fn fields(&mut self, fields: &'static [Field]) {
        for f in fields {
            if f.in_order(self.version) {
                self.value(&f.ty);
            }
        }
        if !self.flexible {
            return;
        }
        let mut tagged: Vec<(u32, &Field)> = fields
            .iter()
            .filter_map(|f| f.tag_at(self.version).map(|t| (t, f)))
            .filter(|_| self.rng.below(2) == 0)
            .collect();
        tagged.sort_by_key(|(t, _)| *t);
        // An unknown tag, after every known one: kept as raw bytes.
        let unknown = self.rng.below(4) == 0;
        self.uvarint(tagged.len() as u32 + unknown as u32);
        for (tag, f) in tagged {
            let mut inner = Sampler {
                out: Vec::new(),
                version: self.version,
                flexible: self.flexible,
                rng: self.rng,
                depth: self.depth,
            };
            inner.nondefault(&f.ty);
            let bytes = inner.out;
            self.uvarint(tag);
            self.uvarint(bytes.len() as u32);
            self.out.extend_from_slice(&bytes);
        }
        if unknown {
            let n = self.rng.below(5) as usize;
            self.uvarint(10_000);
            self.uvarint(n as u32);
            for _ in 0..n {
                let b = self.rng.next() as u8;
                self.out.push(b);
            }
        }
    }

    /// A value the codec will not take for its default (tagged fields with
    /// default values are not written back).
    fn nondefault(&mut self, ty: &'static Type) {
        match ty {
            Type::Bool => self.out.push(1),
            Type::Str => {
                let n = 1 + self.rng.below(8) as usize;
                self.text(n)
            }
            Type::Array(_, elem) => {
                self.length(1, 4);
                self.element(elem);
            }
            Type::Bytes | Type::Records => {
                self.length(1, 4);
                self.out.push(7);
            }
            Type::Struct(fields) | Type::OptStruct(_, fields) => {
                if matches!(ty, Type::OptStruct(n, _) if n.contains(self.version)) {
                    self.out.push(1);
                }
                let v = self.version;
                for f in fields.iter().filter(|f| f.in_order(v)) {
                    self.nondefault(&f.ty);
                }
                if self.flexible {
                    self.uvarint(0);
                }
            }
            other => {
                let start = self.out.len();
                self.value(other);
                // Numbers: make sure some byte is neither 0 nor 0xff, so
                // the value is not 0 or -1 (the usual defaults).
                if let Some(b) = self.out.get_mut(start..).and_then(|s| s.last_mut()) {
                    *b = 0x2a;
                }
            }
        }
    }

    fn text(&mut self, n: usize) {
        self.length(n, 2);
        for _ in 0..n {
            let c = b'a' + self.rng.below(26) as u8;
            self.out.push(c);
        }
    }

    fn element(&mut self, elem: &'static Type) {
        self.depth += 1;
        self.value(elem);
        self.depth -= 1;
    }

    fn value(&mut self, ty: &'static Type) {
        match ty {
            Type::Bool => {
                let b = self.rng.below(2) as u8;
                self.out.push(b)
            }
            Type::I8 => self.random(1),
            Type::I16 | Type::U16 => self.random(2),
            Type::I32 => self.random(4),
            Type::I64 => self.random(8),
            // Any bit pattern but NaN survives a round trip.
            Type::F64 => {
                let v = (self.rng.below(1 << 20) as f64) / 8.0;
                self.out.extend_from_slice(&v.to_be_bytes())
            }
            Type::Uuid => self.random(16),
            Type::Str => {
                let n = self.rng.below(6) as usize;
                self.text(n)
            }
            Type::Bytes | Type::Records => {
                let n = self.rng.below(12) as usize;
                self.length(n, 4);
                self.random(n);
            }
            Type::Array(_, elem) => {
                let n = if self.depth > 3 {
                    0
                } else {
                    self.rng.below(3) as usize
                };
                self.length(n, 4);
                for _ in 0..n {
                    self.element(elem);
                }
            }
            Type::Struct(fields) => self.fields(fields),
            Type::OptStruct(nullable, fields) => {
                if nullable.contains(self.version) {
                    if self.rng.below(2) == 0 {
                        self.out.push(0xff);
                        return;
                    }
                    self.out.push(1);
                }
                self.fields(fields)
            }
        }
    }

    fn random(&mut self, n: usize) {
        for _ in 0..n {
            let b = self.rng.next() as u8;
            self.out.push(b);
        }
    }
}
