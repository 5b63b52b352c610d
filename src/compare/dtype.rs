//! The dtypes a case may sweep, named as in NumPy and PyTorch (`float32`, `bfloat16`), with the
//! kind predicates that tolerance defaults and references need.

use serde::{Deserialize, Serialize};

/// A dtype a case may sweep or an input may fix. Stored, sent to workers and shown as
/// [`Dtype::as_str`]; ordered as [`Dtype::ALL`] (the dtype matrix's column order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
#[derive(strum::IntoStaticStr, strum::Display, strum::EnumString, strum::VariantArray, strum::EnumCount)]
#[strum(serialize_all = "lowercase", parse_err_ty = String, parse_err_fn = unknown_dtype)]
pub enum Dtype {
    /// `bool`.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    Uint8,
    /// `uint16`.
    Uint16,
    /// `uint32`.
    Uint32,
    /// `uint64`.
    Uint64,
    /// `float16` (IEEE half).
    Float16,
    /// `bfloat16` (brain float: float32's exponent, 8 bits of mantissa).
    Bfloat16,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `complex64` (two float32).
    Complex64,
    /// `complex128` (two float64).
    Complex128,
}

impl Dtype {
    /// Every dtype, in the order catalogues and reports list them.
    pub const ALL: [Dtype; <Dtype as strum::EnumCount>::COUNT] =
        *<Dtype as strum::VariantArray>::VARIANTS.first_chunk().expect("every variant");

    /// The NumPy/PyTorch name (`float32`, `bfloat16`), as stored and sent to workers.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// `bool`.
    pub fn is_bool(self) -> bool {
        self == Dtype::Bool
    }

    /// A signed or unsigned integer.
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            Dtype::Int8
                | Dtype::Int16
                | Dtype::Int32
                | Dtype::Int64
                | Dtype::Uint8
                | Dtype::Uint16
                | Dtype::Uint32
                | Dtype::Uint64
        )
    }

    /// A real floating dtype: float16, bfloat16, float32, float64.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::Float16 | Dtype::Bfloat16 | Dtype::Float32 | Dtype::Float64)
    }

    /// complex64 or complex128.
    pub fn is_complex(self) -> bool {
        matches!(self, Dtype::Complex64 | Dtype::Complex128)
    }

    /// Floating or complex: compared within a tolerance rather than exactly.
    pub fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// The names of [`Dtype::ALL`], comma-separated: the expected list in error messages.
    pub fn expected_list() -> String {
        Dtype::ALL.map(Dtype::as_str).join(", ")
    }
}

/// The error of parsing an unknown [`Dtype`], listing the dtypes.
fn unknown_dtype(s: &str) -> String {
    format!("unknown dtype `{s}` (expected one of {})", Dtype::expected_list())
}

impl TryFrom<String> for Dtype {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// A dtype as a framework or an array file names it: one of mlport's [`Dtype`]s, or another
/// name kept as written (`float128`, `float8_e4m3fn`, `object`). The one vocabulary of dtype
/// names that comparisons, tolerances, agreement and dtype checks take; shown and stored as
/// [`DtypeName::as_str`], the name it was parsed from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DtypeName {
    /// A dtype mlport sweeps and knows the kind of.
    Known(Dtype),
    /// Any other name, as the framework wrote it.
    Other(String),
}

impl DtypeName {
    /// The dtype named `name`: [`DtypeName::Known`] for a [`Dtype`]'s name, else
    /// [`DtypeName::Other`].
    pub fn parse(name: &str) -> DtypeName {
        name.parse().map_or_else(|_| DtypeName::Other(name.to_string()), DtypeName::Known)
    }

    /// The name, as parsed.
    pub fn as_str(&self) -> &str {
        match self {
            DtypeName::Known(d) => d.as_str(),
            DtypeName::Other(name) => name,
        }
    }

    /// The [`Dtype`], when mlport knows it.
    pub fn known(&self) -> Option<Dtype> {
        match self {
            DtypeName::Known(d) => Some(*d),
            DtypeName::Other(_) => None,
        }
    }

    /// A real floating dtype: a floating [`Dtype`], or a wider or narrower name no case sweeps
    /// (`float128`, `float8_e4m3fn`).
    pub fn is_float(&self) -> bool {
        match self {
            DtypeName::Known(d) => d.is_float(),
            DtypeName::Other(name) => name.starts_with("float"),
        }
    }

    /// A complex dtype: complex64, complex128, or another `complex…` name (`complex256`).
    pub fn is_complex(&self) -> bool {
        match self {
            DtypeName::Known(d) => d.is_complex(),
            DtypeName::Other(name) => name.starts_with("complex"),
        }
    }

    /// Floating or complex ([`DtypeName::is_float`], [`DtypeName::is_complex`]).
    pub fn is_inexact(&self) -> bool {
        self.is_float() || self.is_complex()
    }
}

impl From<Dtype> for DtypeName {
    fn from(d: Dtype) -> DtypeName {
        DtypeName::Known(d)
    }
}

impl From<&str> for DtypeName {
    fn from(name: &str) -> DtypeName {
        DtypeName::parse(name)
    }
}

impl PartialEq<Dtype> for DtypeName {
    fn eq(&self, d: &Dtype) -> bool {
        *self == DtypeName::Known(*d)
    }
}

impl Serialize for DtypeName {
    /// As its name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for DtypeName {
    /// From any name ([`DtypeName::parse`]).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(DtypeName::parse(&String::deserialize(d)?))
    }
}

impl std::fmt::Display for DtypeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Serde for an optional dtype stored as its name, or `""` when absent (imported cases): the
/// spelling of `cases.dtype` and of the JSON documents that carry a case row.
pub mod or_empty {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Dtype;

    /// `""` for `None`, else the name.
    pub fn serialize<S: Serializer>(d: &Option<Dtype>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.map_or("", Dtype::as_str))
    }

    /// `""` is `None`; any other string must name a dtype.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Dtype>, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() { Ok(None) } else { s.parse().map(Some).map_err(serde::de::Error::custom) }
    }
}

/// The stored spelling of an optional dtype: its name, or `""`.
pub fn name_or_empty(d: Option<Dtype>) -> &'static str {
    d.map_or("", Dtype::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_order() {
        let names: Vec<&str> = Dtype::ALL.iter().map(|d| d.as_str()).collect();
        assert_eq!(
            names,
            [
                "bool",
                "int8",
                "int16",
                "int32",
                "int64",
                "uint8",
                "uint16",
                "uint32",
                "uint64",
                "float16",
                "bfloat16",
                "float32",
                "float64",
                "complex64",
                "complex128"
            ]
        );
        for d in Dtype::ALL {
            assert_eq!(d.as_str().parse::<Dtype>().unwrap(), d);
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{d}\""));
            assert_eq!(serde_json::from_str::<Dtype>(&format!("\"{d}\"")).unwrap(), d);
        }
        let mut sorted = Dtype::ALL;
        sorted.sort();
        assert_eq!(sorted, Dtype::ALL, "Ord follows ALL");
    }

    #[test]
    fn unknown_names_are_rejected_with_the_list() {
        let e = "float8".parse::<Dtype>().unwrap_err();
        assert!(e.starts_with("unknown dtype `float8` (expected one of bool, int8,"), "{e}");
        assert!(e.ends_with("complex64, complex128)"), "{e}");
        assert!(serde_json::from_str::<Dtype>("\"T\"").is_err());
    }

    #[test]
    fn names_mlport_does_not_know_are_kept_as_written() {
        for d in Dtype::ALL {
            let n = DtypeName::parse(d.as_str());
            assert_eq!((n.known(), n.as_str(), n.is_inexact()), (Some(d), d.as_str(), d.is_inexact()));
        }
        let wide = DtypeName::parse("float128");
        assert_eq!((wide.known(), wide.as_str()), (None, "float128"));
        assert!(wide.is_float() && !wide.is_complex() && wide.is_inexact());
        assert!(DtypeName::parse("complex256").is_complex());
        let object = DtypeName::parse("object");
        assert!(!object.is_inexact() && object.to_string() == "object");
        assert_eq!(DtypeName::from(Dtype::Bfloat16), Dtype::Bfloat16);
        assert_ne!(DtypeName::parse("Float32"), Dtype::Float32, "names are case-sensitive");
    }

    #[test]
    fn kinds() {
        for d in Dtype::ALL {
            let n = d.as_str();
            assert_eq!(d.is_float(), n.starts_with("float") || n == "bfloat16", "{n}");
            assert_eq!(d.is_complex(), n.starts_with("complex"), "{n}");
            assert_eq!(d.is_integer(), n.starts_with("int") || n.starts_with("uint"), "{n}");
            assert_eq!(d.is_bool(), n == "bool", "{n}");
            assert_eq!(
                [d.is_bool(), d.is_integer(), d.is_float(), d.is_complex()].iter().filter(|b| **b).count(),
                1,
                "{n} has one kind"
            );
        }
    }
}
