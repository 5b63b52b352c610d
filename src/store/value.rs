//! The values a statement binds and a row holds, the same for both engines ([`Value`], [`Row`]),
//! their conversions to and from Rust types, and the errors of reading a column or running a
//! statement ([`ColumnError`], [`DbError`]).

use std::fmt;

/// A value bound to a statement's parameter or read from a row's column. Integers are `i64`
/// (narrowed to INTEGER columns with a range check), floats `f64`; SQLite stores `Bool` as 0/1.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
    /// A list of integers, some missing: a PostgreSQL `BIGINT[]` parameter (the statement that
    /// records a result binds all its samples as two of these and `unnest`s them). SQLite has no
    /// arrays: binding one there is an error.
    Ints(Vec<Option<i64>>),
}

impl Value {
    /// What the value is, for conversion errors.
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::Real(_) => "a float",
            Value::Text(_) => "text",
            Value::Bool(_) => "a boolean",
            Value::Ints(_) => "a list of integers",
        }
    }
}

/// Turns a Rust value into a parameter [`Value`]; see [`params!`](crate::params).
pub trait ToValue {
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}
impl ToValue for i64 {
    fn to_value(&self) -> Value {
        Value::Int(*self)
    }
}
impl ToValue for i32 {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for u32 {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for u8 {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Real(*self)
    }
}
impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
}
impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_string())
    }
}
impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}
impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}
impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

/// A statement's parameters, `$1` first: `params![run, key]` is `&[Value]`.
#[macro_export]
#[doc(hidden)]
macro_rules! params {
    ($($v:expr),* $(,)?) => {
        &[$($crate::store::ToValue::to_value(&$v)),*][..]
    };
}

/// A column value that is not what the reader expected (type, range, or a stored spelling
/// that names nothing); says which column and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnError {
    /// The column's index in the row, from 0.
    pub index: usize,
    /// What is wrong, e.g. "runs.state: unknown run state `done`".
    pub what: String,
}

impl fmt::Display for ColumnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.index, self.what)
    }
}

impl std::error::Error for ColumnError {}

/// One result row, its columns in the statement's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub(super) Vec<Value>);

impl Row {
    /// Column `index` as `T`. Errors: a NULL for a non-`Option`, another type, or out of range.
    pub fn get<T: FromValue>(&self, index: usize) -> Result<T, ColumnError> {
        let value = self
            .0
            .get(index)
            .ok_or_else(|| ColumnError { index, what: format!("the row has only {} columns", self.0.len()) })?;
        T::from_value(value).map_err(|what| ColumnError { index, what })
    }

    /// A [`ColumnError`] for column `index`.
    pub fn error(&self, index: usize, what: impl fmt::Display) -> ColumnError {
        ColumnError { index, what: what.to_string() }
    }
}

/// Reads a Rust value from a column [`Value`]; the error says what was found instead.
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> Result<Self, String>;
}

fn expected(what: &str, v: &Value) -> String {
    format!("expected {what}, found {}", v.kind())
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Result<i64, String> {
        match v {
            Value::Int(i) => Ok(*i),
            other => Err(expected("an integer", other)),
        }
    }
}
impl FromValue for u64 {
    fn from_value(v: &Value) -> Result<u64, String> {
        let i = i64::from_value(v)?;
        u64::try_from(i).map_err(|_| format!("{i} is negative"))
    }
}
impl FromValue for i32 {
    fn from_value(v: &Value) -> Result<i32, String> {
        let i = i64::from_value(v)?;
        i32::try_from(i).map_err(|_| format!("{i} does not fit a 32-bit integer"))
    }
}
impl FromValue for u32 {
    fn from_value(v: &Value) -> Result<u32, String> {
        let i = i64::from_value(v)?;
        u32::try_from(i).map_err(|_| format!("{i} does not fit an unsigned 32-bit integer"))
    }
}
impl FromValue for u8 {
    fn from_value(v: &Value) -> Result<u8, String> {
        let i = i64::from_value(v)?;
        u8::try_from(i).map_err(|_| format!("{i} does not fit an unsigned 8-bit integer"))
    }
}
impl FromValue for f64 {
    fn from_value(v: &Value) -> Result<f64, String> {
        match v {
            Value::Real(x) => Ok(*x),
            // SQLite hands back an integer-valued REAL as written when its affinity allows.
            Value::Int(i) => Ok(*i as f64),
            other => Err(expected("a float", other)),
        }
    }
}
impl FromValue for bool {
    fn from_value(v: &Value) -> Result<bool, String> {
        match v {
            Value::Bool(b) => Ok(*b),
            Value::Int(0) => Ok(false),
            Value::Int(1) => Ok(true),
            other => Err(expected("a boolean", other)),
        }
    }
}
impl FromValue for String {
    fn from_value(v: &Value) -> Result<String, String> {
        match v {
            Value::Text(s) => Ok(s.clone()),
            other => Err(expected("text", other)),
        }
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Result<Option<T>, String> {
        match v {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// An engine's error, or a column that did not read.
#[derive(Debug)]
pub enum DbError {
    Sqlite(rusqlite::Error),
    Postgres(postgres::Error),
    Column(ColumnError),
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> DbError {
        DbError::Sqlite(e)
    }
}
impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> DbError {
        DbError::Postgres(e)
    }
}
impl From<ColumnError> for DbError {
    fn from(e: ColumnError) -> DbError {
        DbError::Column(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_convert_both_ways_and_name_what_they_found() {
        let row = Row(vec![Value::Int(7), Value::Null, Value::Text("x".into()), Value::Int(-1), Value::Int(1)]);
        assert_eq!(row.get::<i64>(0), Ok(7));
        assert_eq!(row.get::<Option<i64>>(1), Ok(None));
        assert_eq!(row.get::<Option<String>>(2), Ok(Some("x".into())));
        assert_eq!(row.get::<bool>(4), Ok(true));
        assert_eq!(row.get::<f64>(0), Ok(7.0));
        assert_eq!(row.get::<u64>(3).unwrap_err().to_string(), "column 3: -1 is negative");
        assert_eq!(row.get::<i64>(2).unwrap_err().to_string(), "column 2: expected an integer, found text");
        assert_eq!(row.get::<String>(1).unwrap_err().to_string(), "column 1: expected text, found NULL");
        assert!(row.get::<i64>(9).is_err());
        let some: Option<&str> = Some("a");
        assert_eq!(
            crate::params![1i64, "k", some, None::<i64>, true, 2.5f64],
            [
                Value::Int(1),
                Value::Text("k".into()),
                Value::Text("a".into()),
                Value::Null,
                Value::Bool(true),
                Value::Real(2.5)
            ]
        );
    }
}
