//! The PostgreSQL side of [`super::conn::Conn`], through the `postgres` crate (the synchronous
//! client of rust-postgres): statements prepared once per connection and cached, [`Value`]s
//! bound by the type PostgreSQL inferred for each parameter and read back from the column's
//! type, a client that can be rebuilt after the server went away, and what a lost connection
//! and a refused connection look like.

use std::collections::HashMap;
use std::error::Error as StdError;

use bytes::BytesMut;
use postgres::error::SqlState;
use postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls, Statement};

use super::location::PgUrl;
use super::value::{DbError, Row, Value};

type BoxError = Box<dyn StdError + Sync + Send>;

/// A client and its prepared statements (valid for this connection only).
pub struct PgConn {
    client: Client,
    statements: HashMap<String, Statement>,
    url: PgUrl,
}

impl PgConn {
    /// Connects to the server the URL names.
    pub fn connect(url: &PgUrl) -> Result<PgConn, postgres::Error> {
        let mut client = url.config().connect(NoTls)?;
        // The server notices a client whose machine died (no FIN ever comes) within about a
        // minute instead of the operating system's two hours, and so releases the runs it had
        // claimed ([`super::Store::claim_run`]) for a requeued task to continue.
        client.batch_execute(
            "SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3",
        )?;
        Ok(PgConn { client, statements: HashMap::new(), url: url.clone() })
    }

    /// Replaces the client with a new connection (after the old one was lost).
    pub fn reconnect(&mut self) -> Result<(), postgres::Error> {
        *self = PgConn::connect(&self.url)?;
        Ok(())
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        let stmt = self.statement(sql)?;
        Ok(self.client.execute(&stmt, &refs(params))?)
    }

    pub fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let stmt = self.statement(sql)?;
        let rows = self.client.query(&stmt, &refs(params))?;
        rows.iter()
            .map(|r| (0..r.len()).map(|i| r.try_get::<_, Value>(i)).collect::<Result<Vec<_>, _>>().map(Row))
            .collect::<Result<_, _>>()
            .map_err(DbError::from)
    }

    pub fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        Ok(self.client.batch_execute(sql)?)
    }
}

fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

/// Whether the error means the connection is gone or the server is (re)starting, so that
/// reconnecting and running the transaction again can succeed: the client saw the
/// connection close or fail, or the server said it is shutting down, starting up, or that
/// the connection failed (SQLSTATE class 08, 57P01–57P03).
pub fn is_connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        return code.code().starts_with("08")
            || [SqlState::ADMIN_SHUTDOWN, SqlState::CRASH_SHUTDOWN, SqlState::CANNOT_CONNECT_NOW].contains(code);
    }
    // No SQLSTATE: an I/O error talking to (or connecting to) the server.
    let mut source = e.source();
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// What to fix when a connection is refused, for [`super::StoreError::Connect`].
pub fn connect_hint(url: &PgUrl, e: &postgres::Error) -> String {
    let code = e.code();
    if code == Some(&SqlState::INVALID_PASSWORD) || code == Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION) {
        return format!(
            "the server refused user `{}`: check the user and the password (in the URL, \
             postgresql://USER:PASSWORD@HOST:PORT/DB, or in PGPASSWORD)",
            url.user()
        );
    }
    if code == Some(&SqlState::INVALID_CATALOG_NAME) {
        return format!(
            "the server has no database `{}`: create it (createdb -h {} -p {} {}) or name another",
            url.dbname(),
            url.host(),
            url.port(),
            url.dbname()
        );
    }
    if code == Some(&SqlState::CANNOT_CONNECT_NOW) {
        return "the server is starting up or shutting down; try again in a moment".to_string();
    }
    if code.is_none() && is_connection_lost(e) {
        return format!(
            "no PostgreSQL server answers at {}:{}: is it running and listening there (listen_addresses, port)?",
            url.host(),
            url.port()
        );
    }
    "the server refused the connection".to_string()
}

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match (self, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(i), &Type::INT8) => i.to_sql(ty, out),
            (Value::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Value::Int(i), &Type::INT2) => i16::try_from(*i)?.to_sql(ty, out),
            (Value::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Value::Int(i), &Type::BOOL) => (*i != 0).to_sql(ty, out),
            (Value::Real(x), &Type::FLOAT8) => x.to_sql(ty, out),
            (Value::Real(x), &Type::FLOAT4) => (*x as f32).to_sql(ty, out),
            (Value::Bool(b), &Type::BOOL) => b.to_sql(ty, out),
            (Value::Bool(b), &Type::INT8) => i64::from(*b).to_sql(ty, out),
            (Value::Text(s), t) if <&str as ToSql>::accepts(t) => s.as_str().to_sql(ty, out),
            (Value::Ints(v), &Type::INT8_ARRAY) => v.to_sql(ty, out),
            (v, t) => Err(format!("cannot bind {v:?} to a parameter of type {t}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Value, BoxError> {
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i64::from(i32::from_sql(ty, raw)?)),
            Type::INT2 => Value::Int(i64::from(i16::from_sql(ty, raw)?)),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f64::from(f32::from_sql(ty, raw)?)),
            Type::BOOL => Value::Bool(bool::from_sql(ty, raw)?),
            // What a function such as pg_advisory_xact_lock returns.
            Type::VOID => Value::Null,
            _ => Value::Text(<String as FromSql>::from_sql(ty, raw)?),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Value, BoxError> {
        Ok(Value::Null)
    }

    fn accepts(ty: &Type) -> bool {
        matches!(*ty, Type::INT8 | Type::INT4 | Type::INT2 | Type::FLOAT8 | Type::FLOAT4 | Type::BOOL | Type::VOID)
            || <String as FromSql>::accepts(ty)
    }
}
