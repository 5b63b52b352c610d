//! Reading and writing NumPy `.npy` files, after the format's specification
//! (`numpy.lib.format`, versions 1.0, 2.0 and 3.0: the `\x93NUMPY` magic, a major/minor
//! version, a u16 (v1) or u32 (v2, v3) little-endian header length, and a Python-literal dict
//! header with `descr`, `fortran_order` and `shape`), into typed arrays kept in C order and in
//! their own element type (a float32 array stays `Vec<f32>`: nothing is widened in memory).
//! Only plain numeric dtypes are read; object, string, structured and raw void (`|V2`, e.g.
//! ml_dtypes' bfloat16) arrays are refused with an error naming the file.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use bytemuck::Pod;
use half::f16;
use half::slice::HalfFloatSliceExt;

use super::dtype::Dtype;

/// The element types a `.npy` file may hold here: how a [`Dtype`] is laid out in the file
/// (its `descr`, item size and byte order). The names are [`Dtype`]'s ([`ElementType::dtype`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// `bool` (`|b1`), one byte per element.
    Bool,
    /// `int8` (`|i1`).
    Int8,
    /// `int16` (`<i2`).
    Int16,
    /// `int32` (`<i4`).
    Int32,
    /// `int64` (`<i8`).
    Int64,
    /// `uint8` (`|u1`).
    UInt8,
    /// `uint16` (`<u2`).
    UInt16,
    /// `uint32` (`<u4`).
    UInt32,
    /// `uint64` (`<u8`).
    UInt64,
    /// `float16` (`<f2`), IEEE 754 binary16.
    Float16,
    /// `float32` (`<f4`).
    Float32,
    /// `float64` (`<f8`).
    Float64,
    /// `complex64` (`<c8`): two float32, real then imaginary.
    Complex64,
    /// `complex128` (`<c16`): two float64, real then imaginary.
    Complex128,
}

impl ElementType {
    /// Every dtype, in NumPy's order of kinds.
    pub const ALL: [ElementType; 14] = [
        ElementType::Bool,
        ElementType::Int8,
        ElementType::Int16,
        ElementType::Int32,
        ElementType::Int64,
        ElementType::UInt8,
        ElementType::UInt16,
        ElementType::UInt32,
        ElementType::UInt64,
        ElementType::Float16,
        ElementType::Float32,
        ElementType::Float64,
        ElementType::Complex64,
        ElementType::Complex128,
    ];

    /// The dtype of these elements (`float32`, `uint8`, `complex128`, ...).
    pub fn dtype(self) -> Dtype {
        match self {
            ElementType::Bool => Dtype::Bool,
            ElementType::Int8 => Dtype::Int8,
            ElementType::Int16 => Dtype::Int16,
            ElementType::Int32 => Dtype::Int32,
            ElementType::Int64 => Dtype::Int64,
            ElementType::UInt8 => Dtype::Uint8,
            ElementType::UInt16 => Dtype::Uint16,
            ElementType::UInt32 => Dtype::Uint32,
            ElementType::UInt64 => Dtype::Uint64,
            ElementType::Float16 => Dtype::Float16,
            ElementType::Float32 => Dtype::Float32,
            ElementType::Float64 => Dtype::Float64,
            ElementType::Complex64 => Dtype::Complex64,
            ElementType::Complex128 => Dtype::Complex128,
        }
    }

    /// The element type of `dtype`'s arrays; `None` for `bfloat16`, which has no `.npy` form
    /// (the worker saves it as float32).
    pub fn of(dtype: Dtype) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|e| e.dtype() == dtype)
    }

    /// Bytes per element.
    pub fn item_size(self) -> usize {
        match self {
            ElementType::Bool | ElementType::Int8 | ElementType::UInt8 => 1,
            ElementType::Int16 | ElementType::UInt16 | ElementType::Float16 => 2,
            ElementType::Int32 | ElementType::UInt32 | ElementType::Float32 => 4,
            ElementType::Int64 | ElementType::UInt64 | ElementType::Float64 | ElementType::Complex64 => 8,
            ElementType::Complex128 => 16,
        }
    }

    /// The `descr` written for this dtype: `|` for one-byte types, else `<` (little-endian).
    fn descr(self) -> String {
        let (kind, size) = match self {
            ElementType::Bool => ('b', 1),
            ElementType::Int8 | ElementType::Int16 | ElementType::Int32 | ElementType::Int64 => ('i', self.item_size()),
            ElementType::UInt8 | ElementType::UInt16 | ElementType::UInt32 | ElementType::UInt64 => {
                ('u', self.item_size())
            }
            ElementType::Float16 | ElementType::Float32 | ElementType::Float64 => ('f', self.item_size()),
            ElementType::Complex64 | ElementType::Complex128 => ('c', self.item_size()),
        };
        let order = if size == 1 { '|' } else { '<' };
        format!("{order}{kind}{size}")
    }

    /// Parses a `descr` string (`<f4`, `>i8`, `|b1`, ...) into the dtype and whether its
    /// bytes are big-endian. `None` for anything this reader does not support.
    fn parse_descr(descr: &str) -> Option<(ElementType, bool)> {
        let mut chars = descr.chars();
        let order = chars.next()?;
        let rest = chars.as_str();
        let dtype = match rest {
            "b1" => ElementType::Bool,
            "i1" => ElementType::Int8,
            "i2" => ElementType::Int16,
            "i4" => ElementType::Int32,
            "i8" => ElementType::Int64,
            "u1" => ElementType::UInt8,
            "u2" => ElementType::UInt16,
            "u4" => ElementType::UInt32,
            "u8" => ElementType::UInt64,
            "f2" => ElementType::Float16,
            "f4" => ElementType::Float32,
            "f8" => ElementType::Float64,
            "c8" => ElementType::Complex64,
            "c16" => ElementType::Complex128,
            _ => return None,
        };
        let big = match order {
            '<' => false,
            '>' => true,
            '=' => cfg!(target_endian = "big"),
            // `|` (not applicable) only makes sense for one-byte elements.
            '|' if dtype.item_size() == 1 => false,
            _ => return None,
        };
        Some((dtype, big))
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.dtype().fmt(f)
    }
}

/// The elements of an array, in C (row-major) order, each in its own type.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// `bool`.
    Bool(Vec<bool>),
    /// `int8`.
    Int8(Vec<i8>),
    /// `int16`.
    Int16(Vec<i16>),
    /// `int32`.
    Int32(Vec<i32>),
    /// `int64`.
    Int64(Vec<i64>),
    /// `uint8`.
    UInt8(Vec<u8>),
    /// `uint16`.
    UInt16(Vec<u16>),
    /// `uint32`.
    UInt32(Vec<u32>),
    /// `uint64`.
    UInt64(Vec<u64>),
    /// `float16`.
    Float16(Vec<f16>),
    /// `float32`.
    Float32(Vec<f32>),
    /// `float64`.
    Float64(Vec<f64>),
    /// `complex64`: `[re, im]`.
    Complex64(Vec<[f32; 2]>),
    /// `complex128`: `[re, im]`.
    Complex128(Vec<[f64; 2]>),
}

/// Runs `$body` with `$v` bound to the `Vec` inside any [`Data`] variant.
macro_rules! with_data {
    ($data:expr, $v:ident => $body:expr) => {
        match $data {
            Data::Bool($v) => $body,
            Data::Int8($v) => $body,
            Data::Int16($v) => $body,
            Data::Int32($v) => $body,
            Data::Int64($v) => $body,
            Data::UInt8($v) => $body,
            Data::UInt16($v) => $body,
            Data::UInt32($v) => $body,
            Data::UInt64($v) => $body,
            Data::Float16($v) => $body,
            Data::Float32($v) => $body,
            Data::Float64($v) => $body,
            Data::Complex64($v) => $body,
            Data::Complex128($v) => $body,
        }
    };
}
pub(crate) use with_data;

impl Data {
    /// The dtype of the elements.
    pub fn dtype(&self) -> Dtype {
        self.element().dtype()
    }

    /// The element type.
    pub fn element(&self) -> ElementType {
        match self {
            Data::Bool(_) => ElementType::Bool,
            Data::Int8(_) => ElementType::Int8,
            Data::Int16(_) => ElementType::Int16,
            Data::Int32(_) => ElementType::Int32,
            Data::Int64(_) => ElementType::Int64,
            Data::UInt8(_) => ElementType::UInt8,
            Data::UInt16(_) => ElementType::UInt16,
            Data::UInt32(_) => ElementType::UInt32,
            Data::UInt64(_) => ElementType::UInt64,
            Data::Float16(_) => ElementType::Float16,
            Data::Float32(_) => ElementType::Float32,
            Data::Float64(_) => ElementType::Float64,
            Data::Complex64(_) => ElementType::Complex64,
            Data::Complex128(_) => ElementType::Complex128,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_data!(self, v => v.len())
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

macro_rules! data_from_vec {
    ($($t:ty => $variant:ident),* $(,)?) => {
        $(impl From<Vec<$t>> for Data {
            fn from(v: Vec<$t>) -> Data {
                Data::$variant(v)
            }
        })*
    };
}
data_from_vec!(
    bool => Bool, i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => UInt8, u16 => UInt16, u32 => UInt32, u64 => UInt64,
    f16 => Float16, f32 => Float32, f64 => Float64, [f32; 2] => Complex64, [f64; 2] => Complex128,
);

/// An n-dimensional array read from (or to be written to) a `.npy` file: a shape and its
/// elements in C order. The element count always equals the product of the shape (1 for a
/// 0-d array, shape `[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    shape: Vec<usize>,
    data: Data,
}

/// [`NpyArray::new`] was given a shape whose element count differs from the data's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("shape {shape:?} holds {expected} elements but the data has {got}")]
pub struct ShapeError {
    /// The shape given.
    pub shape: Vec<usize>,
    /// The product of `shape`.
    pub expected: usize,
    /// The data's element count.
    pub got: usize,
}

impl NpyArray {
    /// An array of `shape` (C order) over `data`. Errors when the element counts differ.
    pub fn new(shape: Vec<usize>, data: Data) -> Result<NpyArray, ShapeError> {
        let expected = shape.iter().product::<usize>();
        if expected != data.len() {
            return Err(ShapeError { shape, expected, got: data.len() });
        }
        Ok(NpyArray { shape, data })
    }

    /// The shape (`[]` for a 0-d array).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the array has no elements (some dimension is 0).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The dtype of the elements: `bool`, `int8` ... `uint64`, `float16`, `float32`, `float64`,
    /// `complex64` or `complex128` (never `bfloat16`).
    pub fn dtype(&self) -> Dtype {
        self.data.dtype()
    }

    /// The element type.
    pub fn element(&self) -> ElementType {
        self.data.element()
    }

    /// The elements, in C order.
    pub fn data(&self) -> &Data {
        &self.data
    }

    /// The shape and the elements.
    pub fn into_parts(self) -> (Vec<usize>, Data) {
        (self.shape, self.data)
    }
}

/// Why a `.npy` file could not be read or written; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file could not be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The file does not start with the `\x93NUMPY` magic.
    #[error("{}: not a .npy file (no \\x93NUMPY magic)", path.display())]
    NotNpy {
        /// The file.
        path: PathBuf,
    },
    /// A format version other than 1.0, 2.0 or 3.0.
    #[error("{}: unsupported .npy format version {major}.{minor} (1.0, 2.0 and 3.0 are read)", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// The header dict could not be parsed or lacks a key.
    #[error("{}: bad .npy header: {message}", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A dtype other than bool, the integers, float16/32/64 and complex64/128.
    #[error(
        "{}: dtype {descr} is not supported (bool, int8-64, uint8-64, float16/32/64 and complex64/128 are){hint}",
        path.display()
    )]
    UnsupportedDtype {
        /// The file.
        path: PathBuf,
        /// The header's `descr`, as written.
        descr: String,
        /// A hint on where such a dtype comes from, or empty.
        hint: &'static str,
    },
    /// The file ends before the data the header announces.
    #[error("{}: truncated: the header announces {expected} data bytes but the file holds {got}", path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes the shape and dtype need.
        expected: u64,
        /// Bytes present after the header.
        got: u64,
    },
    /// The file holds more bytes than the header announces.
    #[error("{}: {extra} bytes after the data the header announces", path.display())]
    TrailingData {
        /// The file.
        path: PathBuf,
        /// Bytes beyond the data.
        extra: u64,
    },
}

/// What the header says.
#[derive(Debug)]
struct Header {
    dtype: ElementType,
    big_endian: bool,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// Reads the `.npy` file at `path` (format version 1.0, 2.0 or 3.0) into a C-ordered array of
/// its own element type. Fortran-ordered files are transposed to C order; big-endian data is
/// swapped to the host's order.
///
/// Errors ([`NpyError`], each naming `path`): the file cannot be read, is not `.npy`, has an
/// unknown version, a malformed header, an unsupported dtype (object, string, structured,
/// raw void such as ml_dtypes' bfloat16 `<V2`), fewer data bytes than the header announces
/// (truncated) or more.
pub fn read_npy(path: &Path) -> Result<NpyArray, NpyError> {
    let io_err = |source| NpyError::Io { path: path.to_path_buf(), source };
    let mut file = File::open(path).map_err(io_err)?;
    let file_len = file.metadata().map_err(io_err)?.len();
    let (header, header_end) = read_header(&mut file, path)?;
    let n = header.shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let bytes = n.and_then(|n| n.checked_mul(header.dtype.item_size()));
    let have = file_len.saturating_sub(header_end);
    let Some(bytes) = bytes.map(|b| b as u64) else {
        return Err(NpyError::Header {
            path: path.to_path_buf(),
            message: format!("shape {:?} is too large", header.shape),
        });
    };
    if have < bytes {
        return Err(NpyError::Truncated { path: path.to_path_buf(), expected: bytes, got: have });
    }
    if have > bytes {
        return Err(NpyError::TrailingData { path: path.to_path_buf(), extra: have - bytes });
    }
    let n = n.unwrap_or(0);
    let data = read_data(&file, header_end, &header, n).map_err(|source| {
        if source.kind() == io::ErrorKind::UnexpectedEof {
            NpyError::Truncated { path: path.to_path_buf(), expected: bytes, got: have }
        } else {
            io_err(source)
        }
    })?;
    let data = if header.fortran_order && header.shape.len() > 1 {
        with_data!(data, v => Data::from(fortran_to_c(&v, &header.shape)))
    } else {
        data
    };
    Ok(NpyArray { shape: header.shape, data })
}

/// Reads the magic, version and header dict; returns the header and the offset of the data.
fn read_header(file: &mut File, path: &Path) -> Result<(Header, u64), NpyError> {
    let header_err = |message: String| NpyError::Header { path: path.to_path_buf(), message };
    let mut prelude = [0u8; 8];
    match file.read_exact(&mut prelude) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            return Err(NpyError::NotNpy { path: path.to_path_buf() });
        }
        Err(source) => return Err(NpyError::Io { path: path.to_path_buf(), source }),
    }
    if &prelude[..6] != b"\x93NUMPY" {
        return Err(NpyError::NotNpy { path: path.to_path_buf() });
    }
    let (major, minor) = (prelude[6], prelude[7]);
    let len_bytes = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => return Err(NpyError::Version { path: path.to_path_buf(), major, minor }),
    };
    let mut len_buf = [0u8; 4];
    file.read_exact(&mut len_buf[..len_bytes]).map_err(|_| header_err("file ends inside the header length".into()))?;
    let header_len = u32::from_le_bytes(len_buf) as usize;
    let mut text = vec![0u8; header_len];
    file.read_exact(&mut text).map_err(|_| header_err(format!("file ends inside the {header_len}-byte header")))?;
    // v1 and v2 headers are latin-1; v3 is UTF-8. The keys and values read here are ASCII.
    let text: String = if major == 3 {
        String::from_utf8_lossy(&text).into_owned()
    } else {
        text.iter().map(|&b| b as char).collect()
    };
    let header = parse_header(&text).map_err(|message| match message {
        HeaderProblem::Dtype(descr, hint) => NpyError::UnsupportedDtype { path: path.to_path_buf(), descr, hint },
        HeaderProblem::Syntax(m) => header_err(m),
    })?;
    Ok((header, (8 + len_bytes + header_len) as u64))
}

enum HeaderProblem {
    Syntax(String),
    Dtype(String, &'static str),
}

/// Interprets the header dict: `descr` a supported dtype string, `fortran_order` a bool,
/// `shape` a tuple of non-negative integers.
fn parse_header(text: &str) -> Result<Header, HeaderProblem> {
    let mut p = LitParser { s: text.as_bytes(), i: 0, depth: 0 };
    let lit = p.value().map_err(HeaderProblem::Syntax)?;
    p.skip_ws();
    if p.i != p.s.len() {
        return Err(HeaderProblem::Syntax(format!("unexpected text after the dict at byte {}", p.i)));
    }
    let Lit::Dict(entries) = lit else {
        return Err(HeaderProblem::Syntax("the header is not a dict".into()));
    };
    let get = |key: &str| entries.iter().find(|(k, _)| matches!(k, Lit::Str(s) if s == key)).map(|(_, v)| v);
    let descr = match get("descr") {
        Some(Lit::Str(s)) => s.clone(),
        Some(Lit::Seq { tuple: false, .. }) => {
            return Err(HeaderProblem::Dtype("a structured dtype (list descr)".into(), ""));
        }
        Some(_) => return Err(HeaderProblem::Syntax("'descr' is not a string".into())),
        None => return Err(HeaderProblem::Syntax("no 'descr' key".into())),
    };
    let Some((dtype, big_endian)) = ElementType::parse_descr(&descr) else {
        let hint = match descr.get(1..2) {
            Some("V") => {
                " (a raw void dtype; ml_dtypes' bfloat16 and float8 types are saved so: save them as float32 instead)"
            }
            Some("O") => " (an object array, i.e. pickled Python objects)",
            Some("U" | "S") => " (a string array)",
            Some("M" | "m") => " (a datetime/timedelta array)",
            _ => "",
        };
        return Err(HeaderProblem::Dtype(descr, hint));
    };
    let fortran_order = match get("fortran_order") {
        Some(Lit::Bool(b)) => *b,
        Some(_) => return Err(HeaderProblem::Syntax("'fortran_order' is not True or False".into())),
        None => return Err(HeaderProblem::Syntax("no 'fortran_order' key".into())),
    };
    let shape = match get("shape") {
        Some(Lit::Seq { tuple: true, items }) => items
            .iter()
            .map(|d| match d {
                Lit::Int(v) if *v >= 0 && *v <= usize::MAX as i128 => Ok(*v as usize),
                _ => Err(HeaderProblem::Syntax(format!("'shape' holds a bad dimension: {d:?}"))),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(HeaderProblem::Syntax("'shape' is not a tuple".into())),
        None => return Err(HeaderProblem::Syntax("no 'shape' key".into())),
    };
    Ok(Header { dtype, big_endian, fortran_order, shape })
}

/// A Python literal, as far as `.npy` headers use them.
#[derive(Debug)]
enum Lit {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    /// A tuple (`tuple` true) or a list.
    Seq {
        tuple: bool,
        items: Vec<Lit>,
    },
    Dict(Vec<(Lit, Lit)>),
}

/// A small recursive-descent parser for Python literals (`ast.literal_eval`'s subset that
/// `numpy.lib.format` writes: dicts, tuples, lists, strings, ints, True/False/None).
struct LitParser<'a> {
    s: &'a [u8],
    i: usize,
    /// Containers open around the current position; past [`MAX_DEPTH`] the header is refused
    /// (NumPy's headers nest two deep; a hostile one must not overflow the stack).
    depth: usize,
}

/// The deepest nesting of dicts, tuples and lists a header may have.
const MAX_DEPTH: usize = 32;

impl LitParser<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    fn value(&mut self) -> Result<Lit, String> {
        if matches!(self.peek(), Some(b'{' | b'(' | b'[')) {
            if self.depth >= MAX_DEPTH {
                return Err(format!("nested deeper than {MAX_DEPTH} levels at byte {}", self.i));
            }
            self.depth += 1;
            let v = self.container();
            self.depth -= 1;
            return v;
        }
        self.container()
    }

    /// One value of any kind; nested values go through [`LitParser::value`], which counts depth.
    fn container(&mut self) -> Result<Lit, String> {
        match self.peek() {
            None => Err("header ends where a value was expected".into()),
            Some(b'{') => {
                self.i += 1;
                let mut entries = Vec::new();
                loop {
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        return Ok(Lit::Dict(entries));
                    }
                    let key = self.value()?;
                    if self.peek() != Some(b':') {
                        return Err(format!("expected ':' at byte {}", self.i));
                    }
                    self.i += 1;
                    let value = self.value()?;
                    entries.push((key, value));
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {}
                        _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
                    }
                }
            }
            Some(open @ (b'(' | b'[')) => {
                self.i += 1;
                let close = if open == b'(' { b')' } else { b']' };
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(close) {
                        self.i += 1;
                        return Ok(Lit::Seq { tuple: open == b'(', items });
                    }
                    items.push(self.value()?);
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(c) if c == close => {}
                        _ => return Err(format!("expected ',' or '{}' at byte {}", close as char, self.i)),
                    }
                }
            }
            Some(quote @ (b'\'' | b'"')) => {
                self.i += 1;
                let mut out = String::new();
                while let Some(&c) = self.s.get(self.i) {
                    self.i += 1;
                    match c {
                        b'\\' => {
                            let esc = *self.s.get(self.i).ok_or("header ends inside a string")?;
                            self.i += 1;
                            out.push(match esc {
                                b'n' => '\n',
                                b't' => '\t',
                                other => other as char,
                            });
                        }
                        c if c == quote => return Ok(Lit::Str(out)),
                        c => out.push(c as char),
                    }
                }
                Err("header ends inside a string".into())
            }
            Some(c) if c == b'-' || c.is_ascii_digit() => {
                let start = self.i;
                self.i += 1;
                while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
                let v = text.parse::<i128>().map_err(|e| format!("bad integer {text:?}: {e}"))?;
                // Python 2 wrote long integers with an `L` suffix.
                if matches!(self.s.get(self.i), Some(b'L' | b'l')) {
                    self.i += 1;
                }
                Ok(Lit::Int(v))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                    self.i += 1;
                }
                match &self.s[start..self.i] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::None),
                    other => Err(format!("unexpected name {:?}", String::from_utf8_lossy(other))),
                }
            }
            Some(c) => Err(format!("unexpected character {:?} at byte {}", c as char, self.i)),
        }
    }
}

/// Data of at least this many bytes is read by several threads at once (positioned reads of
/// `READ_CHUNK` bytes): copying out of the page cache and faulting in the new pages is
/// CPU-bound, so a large cached file reads about as many times faster as there are cores.
const PARALLEL_READ: usize = 32 << 20;
const READ_CHUNK: usize = 8 << 20;

/// Fills `bytes` from `file`, whose position is at `offset`.
fn fill(file: &File, offset: u64, bytes: &mut [u8]) -> io::Result<()> {
    #[cfg(unix)]
    if bytes.len() >= PARALLEL_READ {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        return bytes
            .par_chunks_mut(READ_CHUNK)
            .enumerate()
            .try_for_each(|(i, chunk)| file.read_exact_at(chunk, offset + (i * READ_CHUNK) as u64));
    }
    let _ = offset;
    let mut file = file;
    file.read_exact(bytes)
}

/// A zeroed `Vec<T>` of `n` elements filled straight from `file` at `offset` (no intermediate
/// byte buffer), each element's bytes reversed in `swap`-sized groups when the file's byte
/// order differs from the host's.
fn read_pod<T: Pod>(file: &File, offset: u64, n: usize, swap: Option<usize>) -> io::Result<Vec<T>> {
    let mut v = vec![T::zeroed(); n];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut v);
    fill(file, offset, bytes)?;
    if let Some(size) = swap {
        bytes.chunks_exact_mut(size).for_each(<[u8]>::reverse);
    }
    Ok(v)
}

/// Reads `n` elements of the header's dtype from `file` at `offset` (its current position).
fn read_data(r: &File, offset: u64, header: &Header, n: usize) -> io::Result<Data> {
    let dtype = header.dtype;
    let component = if dtype.dtype().is_complex() { dtype.item_size() / 2 } else { dtype.item_size() };
    let swap = (header.big_endian != cfg!(target_endian = "big") && component > 1).then_some(component);
    Ok(match dtype {
        ElementType::Bool => Data::Bool(read_pod::<u8>(r, offset, n, None)?.into_iter().map(|b| b != 0).collect()),
        ElementType::Int8 => Data::Int8(read_pod(r, offset, n, swap)?),
        ElementType::Int16 => Data::Int16(read_pod(r, offset, n, swap)?),
        ElementType::Int32 => Data::Int32(read_pod(r, offset, n, swap)?),
        ElementType::Int64 => Data::Int64(read_pod(r, offset, n, swap)?),
        ElementType::UInt8 => Data::UInt8(read_pod(r, offset, n, swap)?),
        ElementType::UInt16 => Data::UInt16(read_pod(r, offset, n, swap)?),
        ElementType::UInt32 => Data::UInt32(read_pod(r, offset, n, swap)?),
        ElementType::UInt64 => Data::UInt64(read_pod(r, offset, n, swap)?),
        ElementType::Float16 => Data::Float16(read_pod(r, offset, n, swap)?),
        ElementType::Float32 => Data::Float32(read_pod(r, offset, n, swap)?),
        ElementType::Float64 => Data::Float64(read_pod(r, offset, n, swap)?),
        ElementType::Complex64 => Data::Complex64(read_pod(r, offset, n, swap)?),
        ElementType::Complex128 => Data::Complex128(read_pod(r, offset, n, swap)?),
    })
}

/// Reorders elements stored in Fortran (column-major) order for `shape` into C order.
fn fortran_to_c<T: Copy>(v: &[T], shape: &[usize]) -> Vec<T> {
    let n = v.len();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    // Fortran strides: the first axis varies fastest.
    let mut fstride = vec![1usize; shape.len()];
    for k in 1..shape.len() {
        fstride[k] = fstride[k - 1] * shape[k - 1];
    }
    // Walk the C order (last axis fastest) with an odometer, keeping the Fortran offset.
    let mut idx = vec![0usize; shape.len()];
    let mut f = 0usize;
    for _ in 0..n {
        out.push(v[f]);
        for k in (0..shape.len()).rev() {
            idx[k] += 1;
            f += fstride[k];
            if idx[k] < shape[k] {
                break;
            }
            f -= fstride[k] * shape[k];
            idx[k] = 0;
        }
    }
    out
}

/// The Python repr of a shape tuple: `()`, `(3,)`, `(3, 4)`.
fn shape_repr(shape: &[usize]) -> String {
    match shape {
        [] => "()".into(),
        [d] => format!("({d},)"),
        _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// Writes `array` to `path` as a `.npy` file the way `numpy.save` does: a version 1.0 header
/// (2.0 only if the header exceeds 65535 bytes), padded with spaces to a multiple of 64 bytes
/// and ended by a newline, C order, little-endian data. Errors name the path.
pub fn write_npy(path: &Path, array: &NpyArray) -> Result<(), NpyError> {
    let io_err = |source| NpyError::Io { path: path.to_path_buf(), source };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        array.element().descr(),
        shape_repr(&array.shape)
    );
    let mut header = Vec::with_capacity(dict.len() + 80);
    header.extend_from_slice(b"\x93NUMPY");
    let v1 = 10 + dict.len() < 65536 - 64;
    let prelude = if v1 { 10 } else { 12 };
    let total = (prelude + dict.len() + 1).div_ceil(64) * 64;
    let header_len = total - prelude;
    if v1 {
        header.extend_from_slice(&[1, 0]);
        header.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        header.extend_from_slice(&[2, 0]);
        header.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    header.extend_from_slice(dict.as_bytes());
    header.resize(total - 1, b' ');
    header.push(b'\n');
    let mut file = File::create(path).map_err(io_err)?;
    file.write_all(&header).map_err(io_err)?;
    write_data(&mut file, &array.data).map_err(io_err)?;
    file.flush().map_err(io_err)
}

/// Writes the elements little-endian.
fn write_data<W: Write>(w: &mut W, data: &Data) -> io::Result<()> {
    fn pod<T: Pod, W: Write>(w: &mut W, v: &[T], component: usize) -> io::Result<()> {
        if cfg!(target_endian = "big") && component > 1 {
            let mut bytes = bytemuck::cast_slice::<T, u8>(v).to_vec();
            bytes.chunks_exact_mut(component).for_each(<[u8]>::reverse);
            w.write_all(&bytes)
        } else {
            w.write_all(bytemuck::cast_slice(v))
        }
    }
    match data {
        Data::Bool(v) => w.write_all(bytemuck::cast_slice::<bool, u8>(v)),
        Data::Int8(v) => pod(w, v, 1),
        Data::Int16(v) => pod(w, v, 2),
        Data::Int32(v) => pod(w, v, 4),
        Data::Int64(v) => pod(w, v, 8),
        Data::UInt8(v) => pod(w, v, 1),
        Data::UInt16(v) => pod(w, v, 2),
        Data::UInt32(v) => pod(w, v, 4),
        Data::UInt64(v) => pod(w, v, 8),
        Data::Float16(v) => pod(w, v, 2),
        Data::Float32(v) => pod(w, v, 4),
        Data::Float64(v) => pod(w, v, 8),
        Data::Complex64(v) => pod(w, v, 4),
        Data::Complex128(v) => pod(w, v, 8),
    }
}

/// Converts float16 elements to float64 in bulk (hardware F16C conversion where the CPU has it).
pub(crate) fn f16_to_f64(src: &[f16], dst: &mut [f64]) {
    src.convert_to_f64_slice(dst);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn a_deeply_nested_header_is_refused_not_a_stack_overflow() {
        let deep = format!(
            "{{'descr': {}0{}, 'fortran_order': False, 'shape': (1,)}}",
            "(".repeat(200_000),
            ")".repeat(200_000)
        );
        match parse_header(&deep) {
            Err(HeaderProblem::Syntax(m)) => assert!(m.contains("nested deeper than 32"), "{m}"),
            _ => panic!("accepted a 200000-deep header"),
        }
        assert!(parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }").is_ok());
    }

    #[test]
    fn round_trips_every_dtype() {
        let dir = tmp();
        let arrays = [
            NpyArray::new(vec![3], vec![true, false, true].into()).unwrap(),
            NpyArray::new(vec![2, 2], vec![-128i8, 0, 1, 127].into()).unwrap(),
            NpyArray::new(vec![2], vec![i16::MIN, i16::MAX].into()).unwrap(),
            NpyArray::new(vec![1, 2], vec![i32::MIN, 7].into()).unwrap(),
            NpyArray::new(vec![2], vec![i64::MIN, i64::MAX].into()).unwrap(),
            NpyArray::new(vec![2], vec![0u8, 255].into()).unwrap(),
            NpyArray::new(vec![2], vec![0u16, 65535].into()).unwrap(),
            NpyArray::new(vec![2], vec![0u32, u32::MAX].into()).unwrap(),
            NpyArray::new(vec![2], vec![0u64, u64::MAX].into()).unwrap(),
            NpyArray::new(vec![2], vec![f16::from_f32(1.5), f16::NEG_INFINITY].into()).unwrap(),
            NpyArray::new(vec![], vec![3.25f32].into()).unwrap(),
            NpyArray::new(vec![0, 3], Vec::<f64>::new().into()).unwrap(),
            NpyArray::new(vec![1], vec![[1.0f32, -2.0]].into()).unwrap(),
            NpyArray::new(vec![2, 1, 1], vec![[1.0f64, -2.0], [f64::MAX, f64::MIN_POSITIVE]].into()).unwrap(),
        ];
        for (i, a) in arrays.iter().enumerate() {
            let p = dir.path().join(format!("{i}.npy"));
            write_npy(&p, a).unwrap();
            let bytes = std::fs::read(&p).unwrap();
            assert_eq!(bytes.len() % 64, a.len() * a.element().item_size() % 64, "header padded to 64");
            assert_eq!(&read_npy(&p).unwrap(), a, "{}", a.dtype());
        }
        assert_eq!(arrays.iter().map(NpyArray::element).collect::<Vec<_>>(), ElementType::ALL.to_vec());
    }

    #[test]
    fn large_files_read_in_parallel_chunks() {
        // 40 MB: past PARALLEL_READ, a few READ_CHUNKs and a partial last one.
        let n = 10_000_001;
        let a = NpyArray::new(vec![n], (0..n as u32).collect::<Vec<u32>>().into()).unwrap();
        let dir = tmp();
        let p = dir.path().join("big.npy");
        write_npy(&p, &a).unwrap();
        assert!(n * 4 > PARALLEL_READ && (n * 4) % READ_CHUNK != 0);
        assert_eq!(read_npy(&p).unwrap(), a);
    }

    #[test]
    fn fortran_order_becomes_c_order() {
        // shape (2, 3): C order [[0, 1, 2], [3, 4, 5]] is stored column by column as 0 3 1 4 2 5.
        assert_eq!(fortran_to_c(&[0, 3, 1, 4, 2, 5], &[2, 3]), vec![0, 1, 2, 3, 4, 5]);
        // shape (2, 2, 2): element (i, j, k) sits at i + 2j + 4k in Fortran order.
        let f: Vec<usize> = (0..8).collect();
        let c = fortran_to_c(&f, &[2, 2, 2]);
        let expect: Vec<usize> =
            (0..2).flat_map(|i| (0..2).flat_map(move |j| (0..2).map(move |k| i + 2 * j + 4 * k))).collect();
        assert_eq!(c, expect);
        assert!(fortran_to_c::<u8>(&[], &[0, 4]).is_empty());
    }

    #[test]
    fn header_literals() {
        let h = parse_header("{'descr': '>i8', 'fortran_order': True, 'shape': (2, 3L), }   \n").ok().unwrap();
        assert_eq!((h.dtype, h.big_endian, h.fortran_order, h.shape), (ElementType::Int64, true, true, vec![2, 3]));
        let h = parse_header("{\"shape\": (), \"fortran_order\": False, \"descr\": \"|b1\"}").ok().unwrap();
        assert_eq!((h.dtype, h.shape), (ElementType::Bool, vec![]));
        assert!(matches!(parse_header("{'descr': '<f4', 'shape': (1,)}"), Err(HeaderProblem::Syntax(_))));
        assert!(matches!(
            parse_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}"),
            Err(HeaderProblem::Syntax(_))
        ));
        assert!(matches!(
            parse_header("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}"),
            Err(HeaderProblem::Dtype(..))
        ));
        assert!(matches!(
            parse_header("{'descr': '<f16', 'fortran_order': False, 'shape': (1,)}"),
            Err(HeaderProblem::Dtype(..))
        ));
        assert!(matches!(
            parse_header("{'descr': '|i2', 'fortran_order': False, 'shape': (1,)}"),
            Err(HeaderProblem::Dtype(..))
        ));
        assert!(matches!(parse_header("{'descr': '<f4'"), Err(HeaderProblem::Syntax(_))));
    }

    fn replace(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
        let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
        [&bytes[..at], to, &bytes[at + from.len()..]].concat()
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tmp();
        let good = dir.path().join("good.npy");
        write_npy(&good, &NpyArray::new(vec![4], vec![1.0f32, 2.0, 3.0, 4.0].into()).unwrap()).unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("truncated.npy", bytes[..bytes.len() - 3].to_vec(), "truncated: the header announces 16 data bytes"),
            ("trailing.npy", [bytes.clone(), vec![0]].concat(), "1 bytes after the data"),
            ("cut_header.npy", bytes[..30].to_vec(), "bad .npy header"),
            ("empty.npy", vec![], "not a .npy file"),
            ("text.npy", b"hello world, not numpy".to_vec(), "not a .npy file"),
            ("v9.npy", [b"\x93NUMPY\x09\x00".as_slice(), &bytes[8..]].concat(), "version 9.0"),
            ("bf16.npy", replace(&bytes, b"<f4", b"<V2"), "dtype <V2 is not supported"),
            ("object.npy", replace(&bytes, b"'<f4'", b"'|O' "), "dtype |O is not supported"),
        ];
        for (name, content, needle) in cases {
            let p = dir.path().join(name);
            std::fs::write(&p, content).unwrap();
            let msg = read_npy(&p).unwrap_err().to_string();
            assert!(msg.contains(name) && msg.contains(needle), "{name}: {msg}");
        }
        let missing = dir.path().join("missing.npy");
        assert!(read_npy(&missing).unwrap_err().to_string().contains("missing.npy"));
    }

    #[test]
    fn shape_must_hold_the_data() {
        let e = NpyArray::new(vec![2, 2], vec![1u8, 2, 3].into()).unwrap_err();
        assert_eq!((e.expected, e.got), (4, 3));
        assert_eq!(NpyArray::new(vec![], vec![1u8].into()).unwrap().len(), 1);
        assert!(NpyArray::new(vec![], Vec::<u8>::new().into()).is_err());
    }

    #[test]
    fn dtype_names_round_trip() {
        for d in ElementType::ALL {
            assert_eq!(ElementType::of(d.dtype()), Some(d));
            assert_eq!(d.to_string(), d.dtype().as_str());
            assert_eq!(ElementType::parse_descr(&d.descr()), Some((d, false)));
        }
        assert_eq!(ElementType::of(Dtype::Bfloat16), None);
    }
}
