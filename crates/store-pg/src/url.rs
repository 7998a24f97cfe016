//! `--database` values: only `postgres://` / `postgresql://` URLs are taken (a bare word
//! or a typo is refused naming it), and shown without their password.

use std::str::FromStr;

use super::PgError;

/// The connection settings of `url`.
pub(crate) fn parse(url: &str) -> Result<tokio_postgres::Config, PgError> {
    let bad = |reason: String| PgError::BadUrl {
        url: shown(url),
        reason,
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(bad(
            "it does not start with postgres:// or postgresql://".into()
        ));
    }
    let config = tokio_postgres::Config::from_str(url).map_err(|e| bad(e.to_string()))?;
    if config.get_hosts().is_empty() {
        return Err(bad("it names no host".into()));
    }
    Ok(config)
}

/// `url` with the password (between `user:` and `@`) replaced by `***`.
pub fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// What went wrong with a query, with the server's message when it sent one.
pub(crate) fn db_reason(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut s = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(inner) = source {
                s = format!("{s}: {inner}");
                source = inner.source();
            }
            s
        }
    }
}

/// Why the pool has no connection to give.
pub(crate) fn pool_reason(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(e) => db_reason(e),
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(
            shown("postgres://ann:s3cret@db.example:5433/runs?sslmode=disable"),
            "postgres://ann:***@db.example:5433/runs?sslmode=disable"
        );
        assert_eq!(shown("postgres://ann@db/runs"), "postgres://ann@db/runs");
        assert_eq!(shown("postgres://db/runs"), "postgres://db/runs");
        assert_eq!(shown("not a url"), "not a url");
    }

    #[test]
    fn only_postgres_urls_are_taken() {
        let err = parse("mysql://a:pw@h/db").unwrap_err().to_string();
        assert_eq!(
            err,
            "`mysql://a:***@h/db` is not a PostgreSQL URL: it does not start with postgres:// or postgresql:// (expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE)"
        );
        assert!(parse("postgres://h:notaport/db").is_err());
        assert!(parse("postgres://ann@127.0.0.1:5432/db").is_ok());
    }
}
