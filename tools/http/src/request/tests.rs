use super::*;
use crate::Header;

fn req(url: &str) -> Request {
    Request {
        url: url.into(),
        method: Method::Get,
        headers: Vec::new(),
        body: None,
        json: None,
        max_redirects: None,
        max_body_bytes: None,
    }
}

fn header(name: &str, value: &str) -> Header {
    Header {
        name: name.into(),
        value: value.into(),
    }
}

fn invalid_message(r: &Request) -> String {
    match plan(r) {
        Err(Error::InvalidRequest(m)) => m,
        other => panic!("expected invalid-request, got {other:?}"),
    }
}

#[test]
fn a_plain_get_gets_defaults() {
    let p = plan(&req("https://example.com:8443/a/b?q=1#frag")).unwrap();
    assert_eq!(p.max_redirects, DEFAULT_MAX_REDIRECTS);
    assert_eq!(p.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
    assert_eq!(p.first.method, Method::Get);
    assert_eq!(p.first.body, None);
    assert_eq!(
        p.first.headers,
        vec![("user-agent".to_string(), USER_AGENT.to_string())]
    );
    assert!(p.first.is_https());
    assert_eq!(p.first.authority(), "example.com:8443");
    assert_eq!(p.first.path_with_query(), "/a/b?q=1");
}

#[test]
fn authority_leaves_out_default_ports_and_keeps_ipv6_brackets() {
    assert_eq!(plan(&req("http://h:80")).unwrap().first.authority(), "h");
    assert_eq!(plan(&req("http://h")).unwrap().first.path_with_query(), "/");
    assert_eq!(
        plan(&req("http://[::1]:9/x")).unwrap().first.authority(),
        "[::1]:9"
    );
}

#[test]
fn bad_urls_are_invalid_requests_naming_the_url() {
    let m = invalid_message(&req("not a url"));
    assert!(m.starts_with("`not a url` is not a valid URL: "), "{m}");
    let m = invalid_message(&req("/relative/path"));
    assert!(m.contains("relative URL without a base"), "{m}");
    assert_eq!(
        invalid_message(&req("ftp://example.com/file")),
        "`ftp://example.com/file` uses the scheme `ftp`: only `http` and `https` URLs are \
         supported"
    );
    let m = invalid_message(&req("file:///etc/passwd"));
    assert!(m.contains("scheme `file`"), "{m}");
    let m = invalid_message(&req("http://user:pw@example.com/"));
    assert!(m.contains("credentials"), "{m}");
}

#[test]
fn body_and_json_together_are_refused() {
    let mut r = req("http://h/");
    r.body = Some("x".into());
    r.json = Some("{}".into());
    assert!(invalid_message(&r).contains("both `body` and `json`"));
}

#[test]
fn json_is_validated_and_typed() {
    let mut r = req("http://h/");
    r.method = Method::Post;
    r.json = Some("{\"a\": [1, 2]}".into());
    let p = plan(&r).unwrap();
    assert_eq!(p.first.body.as_deref(), Some(&b"{\"a\": [1, 2]}"[..]));
    assert_eq!(
        p.first.headers,
        vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("content-length".to_string(), "13".to_string()),
            ("user-agent".to_string(), USER_AGENT.to_string()),
        ]
    );

    r.headers = vec![header("Content-Type", "application/vnd.api+json")];
    let p = plan(&r).unwrap();
    assert_eq!(p.first.headers[0].1, "application/vnd.api+json");
    assert!(!p.first.headers.iter().any(|(_, v)| v == "application/json"));

    r.json = Some("{\"a\": ".into());
    let m = invalid_message(&r);
    assert!(m.starts_with("`json` is not valid JSON: "), "{m}");
}

#[test]
fn content_length_is_added_unless_given_or_get_or_head_without_body() {
    let mut r = req("http://h/");
    for (method, sent) in [
        (Method::Get, false),
        (Method::Head, false),
        (Method::Post, true),
        (Method::Put, true),
        (Method::Patch, true),
        (Method::Delete, true),
    ] {
        r.method = method;
        let headers = plan(&r).unwrap().first.headers;
        let zero = ("content-length".to_string(), "0".to_string());
        assert_eq!(headers.contains(&zero), sent, "{method:?}");
    }
    r.method = Method::Get;
    r.body = Some(String::new());
    let zero = ("content-length".to_string(), "0".to_string());
    assert!(plan(&r).unwrap().first.headers.contains(&zero));
    r.method = Method::Post;
    r.body = Some("héllo".into());
    r.headers = vec![header("User-Agent", "me")];
    let p = plan(&r).unwrap();
    assert_eq!(
        p.first.headers,
        vec![
            ("User-Agent".to_string(), "me".to_string()),
            ("content-length".to_string(), "6".to_string()),
        ]
    );
    r.headers = vec![header("Content-Length", "6")];
    assert_eq!(plan(&r).unwrap().first.headers.len(), 2);
}

#[test]
fn headers_are_checked() {
    let mut r = req("http://h/");
    r.headers = vec![header("X-Ok", "a\tb"), header("bad name", "v")];
    let m = invalid_message(&r);
    assert!(
        m.starts_with("the header name `bad name` is not valid"),
        "{m}"
    );
    r.headers = vec![header("x-inject", "v\r\nhost: evil")];
    let m = invalid_message(&r);
    assert!(
        m.starts_with("the value of header `x-inject` is not valid: it contains the control"),
        "{m}"
    );
    r.headers = vec![header("", "v")];
    assert!(invalid_message(&r).contains("empty name"));
    r.headers = vec![header("x-ünïcode", "v")];
    assert!(invalid_message(&r).contains("x-ünïcode"));
}

#[test]
fn body_limit_is_capped() {
    let mut r = req("http://h/");
    r.max_body_bytes = Some(MAX_BODY_BYTES);
    assert_eq!(plan(&r).unwrap().max_body_bytes, MAX_BODY_BYTES);
    r.max_body_bytes = Some(MAX_BODY_BYTES + 1);
    assert_eq!(
        invalid_message(&r),
        "max-body-bytes 16777217 is above the maximum of 16777216"
    );
}

#[test]
fn decoding_is_lossy_and_drops_a_cut_character() {
    assert_eq!(decode_body(b"plain".to_vec(), false), "plain");
    assert_eq!(decode_body(b"a\xffb".to_vec(), false), "a\u{fffd}b");
    // "日" is E6 97 A5: cut after two bytes.
    assert_eq!(decode_body(b"ab\xe6\x97".to_vec(), true), "ab");
    assert_eq!(decode_body(b"ab\xe6\x97".to_vec(), false), "ab\u{fffd}");
    assert_eq!(decode_body("ab日".as_bytes().to_vec(), true), "ab日");
    // A 4-byte character cut after three bytes.
    assert_eq!(decode_body(b"\xf0\x9f\x98".to_vec(), true), "");
    assert_eq!(decode_body(Vec::new(), true), "");
    // Invalid bytes that are not a cut character stay visible.
    assert_eq!(decode_body(b"a\xff".to_vec(), true), "a\u{fffd}");
}
