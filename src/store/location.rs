//! Where a store lives: an SQLite file (a path, the default `mlport.db`) or a PostgreSQL
//! database (`postgresql://USER[:PASSWORD]@HOST[:PORT]/DB`, or `postgres://…`), as `--db` and
//! `MLPORT_DB` name it. A location displays without its password, so it can name the store in
//! every message.

use std::fmt;
use std::path::{Path, PathBuf};

/// PostgreSQL's default port, used when a URL names none.
pub const DEFAULT_PORT: u16 = 5432;

/// A store's location, parsed once from `--db` / `MLPORT_DB`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file (created when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database on a server.
    Postgres(Box<PgUrl>),
}

/// A PostgreSQL connection URL, checked by the `postgres` crate's parser (libpq's URL syntax,
/// including `?sslmode=…`-style parameters); `display` is the URL without its password.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl {
    /// The URL as given (with the password, if any): what is handed to the client.
    url: String,
    /// `postgresql://USER@HOST:PORT/DB`, for messages.
    display: String,
    /// The user, from the URL or else `$USER` (libpq's default, the operating-system user).
    user: String,
    /// The host name (or socket folder) and port, for messages and local folder names.
    host: String,
    port: u16,
    /// The database name (libpq's default: the user's name).
    dbname: String,
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the password, even in debug output.
        f.debug_tuple("PgUrl").field(&self.display).finish()
    }
}

/// Why `--db` / `MLPORT_DB` was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LocationError {
    /// A URL of another scheme (`mysql://…`, `sqlite://…`, `http://…`).
    #[error(
        "`{given}` is not a PostgreSQL URL: --db (or MLPORT_DB) takes an SQLite file path (e.g. mlport.db) \
         or postgresql://USER@HOST:PORT/DB"
    )]
    NotPostgres { given: String },
    /// A `postgresql://` URL the client cannot read.
    #[error("`{given}` is not a valid PostgreSQL URL ({why}); write it as postgresql://USER@HOST:PORT/DB")]
    BadUrl { given: String, why: String },
    /// An empty `--db`.
    #[error("--db (or MLPORT_DB) is empty: give an SQLite file path or postgresql://USER@HOST:PORT/DB")]
    Empty,
}

impl Location {
    /// Reads `--db`'s value: `postgresql://…` or `postgres://…` is PostgreSQL, another
    /// `scheme://…` is refused, anything else is an SQLite path.
    ///
    /// Errors: [`LocationError`], naming the value (without a password) and what to write instead.
    pub fn parse(given: &str) -> Result<Location, LocationError> {
        if given.trim().is_empty() {
            return Err(LocationError::Empty);
        }
        let Some((scheme, _)) = given.split_once("://") else {
            // `postgres:/db` or `postgresql:db` is a mistyped URL, not a file to create.
            let lower = given.to_ascii_lowercase();
            if lower.starts_with("postgres:") || lower.starts_with("postgresql:") {
                return Err(LocationError::BadUrl {
                    given: redact(given),
                    why: "a URL starts with postgresql:// (two slashes)".into(),
                });
            }
            return Ok(Location::Sqlite(PathBuf::from(given)));
        };
        // A scheme is letters, digits, `+`, `-`, `.` (RFC 3986); a path such as `./a://b` is not one.
        let is_scheme = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if !is_scheme {
            return Ok(Location::Sqlite(PathBuf::from(given)));
        }
        if !matches!(scheme.to_ascii_lowercase().as_str(), "postgresql" | "postgres") {
            return Err(LocationError::NotPostgres { given: redact(given) });
        }
        PgUrl::parse(given).map(|u| Location::Postgres(Box::new(u)))
    }

    /// The SQLite file, `None` for PostgreSQL.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }

    /// The engine's name with its article, for messages: "an SQLite" / "a PostgreSQL".
    pub fn engine(&self) -> &'static str {
        match self {
            Location::Sqlite(_) => "an SQLite",
            Location::Postgres(_) => "a PostgreSQL",
        }
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Location {
        Location::Sqlite(p)
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::Sqlite(p.to_path_buf())
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(u) => f.write_str(&u.display),
        }
    }
}

impl PgUrl {
    /// Parses a `postgresql://` or `postgres://` URL with the client's own parser.
    pub fn parse(given: &str) -> Result<PgUrl, LocationError> {
        let bad = |why: String| LocationError::BadUrl { given: redact(given), why };
        let config: postgres::Config = given.parse().map_err(|e: postgres::Error| bad(e.to_string()))?;
        let user = match config.get_user() {
            Some(u) => u.to_string(),
            None => {
                std::env::var("USER").ok().filter(|u| !u.is_empty()).ok_or_else(|| bad("it names no user".into()))?
            }
        };
        let host = match config.get_hosts() {
            [] => "localhost".to_string(),
            [postgres::config::Host::Tcp(h)] => h.clone(),
            [postgres::config::Host::Unix(p)] => p.display().to_string(),
            _ => return Err(bad("it names several hosts; give one".into())),
        };
        let port = match config.get_ports() {
            [] => DEFAULT_PORT,
            [p] => *p,
            _ => return Err(bad("it names several ports; give one".into())),
        };
        let dbname = config.get_dbname().unwrap_or(&user).to_string();
        let display = format!("postgresql://{user}@{host}:{port}/{dbname}");
        Ok(PgUrl { url: given.to_string(), display, user, host, port, dbname })
    }

    /// The client's configuration: the URL's, with the user filled in and, when the URL has no
    /// password, `PGPASSWORD`'s (as libpq reads it).
    pub fn config(&self) -> postgres::Config {
        let mut config: postgres::Config = self.url.parse().expect("parsed when the URL was read");
        config.user(&self.user);
        // A URL without a host names localhost, as its display says (the client alone would
        // refuse it: libpq's default socket folder is not one it reads).
        if config.get_hosts().is_empty() {
            config.host("localhost");
        }
        if config.get_password().is_none()
            && let Ok(password) = std::env::var("PGPASSWORD")
        {
            config.password(password);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        // Names this process in pg_stat_activity, which a refused claim on a run quotes.
        config.application_name(&format!("mlport on {} pid {}", crate::sysinfo::host(), std::process::id()));
        config
    }

    /// The user the store connects as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The server's host (or socket folder).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The database's name.
    pub fn dbname(&self) -> &str {
        &self.dbname
    }
}

/// `given` with the passwords of a URL replaced by `***`: the one in `scheme://user:password@…`
/// and any `password=…` parameter (`?password=…`, `&password=…`, libpq's spelling). Text without
/// `://` or `password=` is returned as it is. Used for every message and for the command line a
/// run records, so a password given in `--db` is never stored or shown.
pub fn redact(given: &str) -> String {
    let masked = match given.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
            let (authority, tail) = rest.split_at(authority_end);
            match authority.rsplit_once('@').and_then(|(userinfo, host)| Some((userinfo.split_once(':')?.0, host))) {
                Some((user, host)) => format!("{scheme}://{user}:***@{host}{tail}"),
                None => given.to_string(),
            }
        }
        None => given.to_string(),
    };
    mask_password_parameters(&masked)
}

/// `…password=VALUE…` with VALUE (up to the next `&`, `#` or whitespace) replaced by `***`,
/// the key matched case-insensitively.
fn mask_password_parameters(text: &str) -> String {
    const KEY: &str = "password=";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find(KEY) {
        let value_start = at + found + KEY.len();
        let value_end = text[value_start..]
            .find(|c: char| c == '&' || c == '#' || c.is_whitespace())
            .map_or(text.len(), |e| value_start + e);
        out.push_str(&text[at..value_start]);
        if value_end > value_start {
            out.push_str("***");
        }
        at = value_end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_parameters_and_half_urls_are_never_echoed() {
        let given = "postgresql://ann@db:5432/fleet?password=s3cret&bogus=1";
        let e = Location::parse(given).unwrap_err().to_string();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(e.contains("password=***&bogus=1"), "{e}");
        assert_eq!(redact("--db=postgres://a:b@h/d?PassWord=x#y"), "--db=postgres://a:***@h/d?PassWord=***#y");
        assert_eq!(redact("mlport.db"), "mlport.db");
        let e = Location::parse("postgres:/x?password=s3cret").unwrap_err();
        assert!(matches!(e, LocationError::BadUrl { .. }), "{e:?}");
        assert!(!e.to_string().contains("s3cret") && e.to_string().contains("postgresql://"), "{e}");
        assert!(matches!(Location::parse("PostgreSQL:fleet"), Err(LocationError::BadUrl { .. })));
        assert_eq!(Location::parse("postgres-data.db").unwrap(), Location::Sqlite("postgres-data.db".into()));
    }

    #[test]
    fn paths_are_sqlite_and_urls_postgres() {
        assert_eq!(Location::parse("mlport.db").unwrap(), Location::Sqlite("mlport.db".into()));
        assert_eq!(Location::parse("./odd://name.db").unwrap(), Location::Sqlite("./odd://name.db".into()));
        let Location::Postgres(u) = Location::parse("postgresql://ann:s3cret@db.example:6543/fleet").unwrap() else {
            panic!("not postgres")
        };
        assert_eq!((u.user(), u.host(), u.port(), u.dbname()), ("ann", "db.example", 6543, "fleet"));
        let shown = Location::Postgres(u.clone()).to_string();
        assert_eq!(shown, "postgresql://ann@db.example:6543/fleet");
        assert!(!format!("{u:?}").contains("s3cret"));
        assert_eq!(u.config().get_password(), Some(&b"s3cret"[..]));
        let Location::Postgres(u) = Location::parse("postgres://bob@localhost/x").unwrap() else { panic!() };
        assert_eq!((u.port(), u.dbname()), (DEFAULT_PORT, "x"));
    }

    #[test]
    fn other_schemes_and_bad_urls_are_refused_without_the_password() {
        let e = Location::parse("mysql://root:hunter2@h/db").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`mysql://root:***@h/db` is not a PostgreSQL URL: --db (or MLPORT_DB) takes an SQLite file path \
             (e.g. mlport.db) or postgresql://USER@HOST:PORT/DB"
        );
        assert!(matches!(Location::parse("sqlite://x.db"), Err(LocationError::NotPostgres { .. })));
        let e = Location::parse("postgresql://u:pw@host:notaport/db").unwrap_err();
        assert!(matches!(e, LocationError::BadUrl { .. }), "{e}");
        let text = e.to_string();
        assert!(text.contains("`postgresql://u:***@host:notaport/db` is not a valid PostgreSQL URL"), "{text}");
        assert!(!text.contains("pw@"), "{text}");
        assert_eq!(Location::parse("").unwrap_err(), LocationError::Empty);
        assert_eq!(Location::parse("  ").unwrap_err(), LocationError::Empty, "blank is empty, not a file named so");
    }

    #[test]
    fn a_url_without_a_host_connects_to_localhost_as_it_says() {
        let Location::Postgres(u) = Location::parse("postgresql://ann@/fleet").unwrap() else { panic!("not postgres") };
        assert_eq!(Location::Postgres(u.clone()).to_string(), "postgresql://ann@localhost:5432/fleet");
        assert_eq!(u.config().get_hosts(), [postgres::config::Host::Tcp("localhost".into())]);
    }
}
