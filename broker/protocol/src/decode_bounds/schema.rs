//! The vocabulary of the layout tables in `messages.rs`: a message is a list
//! of fields, each present in a range of versions, each of a wire type.

/// An inclusive range of versions (`V(3, MAX)` is Kafka's "3+").
#[derive(Debug, Clone, Copy)]
pub struct V(pub i16, pub i16);

impl V {
    pub fn contains(&self, v: i16) -> bool {
        v >= self.0 && v <= self.1
    }
}

/// How a field is encoded. Strings, bytes and arrays use the compact
/// (unsigned varint) lengths in a message's flexible versions.
#[derive(Debug, Clone, Copy)]
pub enum Type {
    Bool,
    I8,
    I16,
    U16,
    I32,
    I64,
    F64,
    Uuid,
    Str,
    Bytes,
    Records,
    /// Elements of the given decoded size (`size_of` the codec's element type).
    Array(usize, &'static Type),
    Struct(&'static [Field]),
    /// A struct that may be null in the given versions: an int8 marker
    /// (1 present, anything else null) before it there.
    OptStruct(V, &'static [Field]),
}

#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub versions: V,
    /// `Some((tag, versions))` where the field travels in the tagged-fields
    /// section instead of in order.
    pub tagged: Option<(u32, V)>,
    pub ty: Type,
}

impl Field {
    pub const fn new(name: &'static str, versions: V, ty: Type) -> Self {
        Field {
            name,
            versions,
            tagged: None,
            ty,
        }
    }
    pub const fn tagged(name: &'static str, versions: V, tag: u32, tagged: V, ty: Type) -> Self {
        Field {
            name,
            versions,
            tagged: Some((tag, tagged)),
            ty,
        }
    }
    /// Whether version `v` carries this field in order (not tagged).
    pub(crate) fn in_order(&self, v: i16) -> bool {
        self.versions.contains(v) && !self.tagged.is_some_and(|(_, tv)| tv.contains(v))
    }
    /// The field's tag in version `v`, if it is a tagged field there.
    pub(crate) fn tag_at(&self, v: i16) -> Option<u32> {
        self.tagged
            .filter(|(_, tv)| tv.contains(v) && self.versions.contains(v))
            .map(|(t, _)| t)
    }
}

#[derive(Debug)]
pub struct Message {
    pub name: &'static str,
    pub valid: V,
    /// The first flexible version (compact lengths, tagged fields);
    /// `i16::MAX` for a message that has none.
    pub flexible_from: i16,
    pub fields: &'static [Field],
}
