//! HTTP headers for remote transports: the configured extra headers plus
//! `Authorization` from [`AuthSpec`]. Values arrive already resolved (the
//! config layer reads `keyring:` references); they are marked sensitive so
//! they never show in debug output, and errors name the header, never its
//! value.

use std::collections::BTreeMap;

use base64::Engine as _;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use crate::config::servers::AuthSpec;
use crate::upstream::errors::UpstreamError;

/// The headers to send on every request to the server.
pub(crate) fn header_map(
    extra: &BTreeMap<String, String>,
    auth: Option<&AuthSpec>,
) -> Result<HeaderMap, UpstreamError> {
    let mut map = HeaderMap::new();
    for (name, value) in extra {
        let bad = || UpstreamError::BadHeader { name: name.clone() };
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let mut v = HeaderValue::from_str(value).map_err(|_| bad())?;
        v.set_sensitive(true);
        map.insert(n, v);
    }
    if let Some(auth) = auth {
        let value = match auth {
            AuthSpec::Bearer { token } => format!("Bearer {token}"),
            AuthSpec::Basic { username, password } => {
                let raw = format!("{username}:{password}");
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(raw)
                )
            }
        };
        let mut v = HeaderValue::from_str(&value).map_err(|_| UpstreamError::BadHeader {
            name: "authorization".to_owned(),
        })?;
        v.set_sensitive(true);
        map.insert(AUTHORIZATION, v);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_becomes_an_authorization_header() {
        let extra = BTreeMap::from([("X-Team".to_owned(), "blue".to_owned())]);
        let basic = AuthSpec::Basic {
            username: "u".into(),
            password: "p".into(),
        };
        let m = header_map(&extra, Some(&basic)).unwrap();
        assert_eq!(m["authorization"], "Basic dTpw");
        assert_eq!(m["x-team"], "blue");
        assert!(m["authorization"].is_sensitive());
        let bearer = AuthSpec::Bearer {
            token: "t0k".into(),
        };
        let m = header_map(&BTreeMap::new(), Some(&bearer)).unwrap();
        assert_eq!(m["authorization"], "Bearer t0k");
    }

    #[test]
    fn bad_headers_are_named_without_their_value() {
        let extra = BTreeMap::from([("X-Key".to_owned(), "sec\nret".to_owned())]);
        let e = header_map(&extra, None).unwrap_err().to_string();
        assert!(e.contains("X-Key") && !e.contains("sec"), "{e}");
    }
}
