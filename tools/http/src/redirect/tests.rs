use url::Url;

use super::*;

fn hop(url: &str, method: Method, body: Option<&str>) -> Hop {
    let mut headers = vec![
        ("Authorization".to_string(), "Bearer t".to_string()),
        ("accept".to_string(), "*/*".to_string()),
    ];
    if let Some(b) = body {
        headers.push(("content-type".into(), "text/plain".into()));
        headers.push(("content-length".into(), b.len().to_string()));
    }
    Hop {
        url: Url::parse(url).unwrap(),
        method,
        headers,
        body: body.map(|b| b.as_bytes().to_vec()),
    }
}

fn names(h: &Hop) -> Vec<&str> {
    h.headers.iter().map(|(n, _)| n.as_str()).collect()
}

#[test]
fn only_redirect_statuses_with_a_location_are_followed() {
    let h = hop("http://a.test/x", Method::Get, None);
    for status in [200, 204, 300, 304, 305, 404, 500] {
        assert_eq!(next_hop(&h, status, Some("/y")).unwrap(), None, "{status}");
    }
    assert_eq!(next_hop(&h, 302, None).unwrap(), None);
    for status in [301, 302, 303, 307, 308] {
        assert!(
            next_hop(&h, status, Some("/y")).unwrap().is_some(),
            "{status}"
        );
    }
}

#[test]
fn locations_resolve_against_the_current_url() {
    let h = hop("https://a.test/dir/page?q=1", Method::Get, None);
    let to = |loc: &str| {
        next_hop(&h, 302, Some(loc))
            .unwrap()
            .unwrap()
            .url
            .to_string()
    };
    assert_eq!(to("other"), "https://a.test/dir/other");
    assert_eq!(to("../up"), "https://a.test/up");
    assert_eq!(to("/abs?x=2"), "https://a.test/abs?x=2");
    assert_eq!(to("//b.test/p"), "https://b.test/p");
    assert_eq!(to("http://c.test:8080/"), "http://c.test:8080/");
    assert_eq!(to("?page=2"), "https://a.test/dir/page?page=2");
    assert_eq!(to("  /trimmed "), "https://a.test/trimmed");
}

#[test]
fn bad_locations_are_errors_naming_both_urls() {
    let h = hop("http://a.test/x", Method::Get, None);
    let Err(Error::Other(m)) = next_hop(&h, 301, Some("ftp://files.test/f")) else {
        panic!("expected an error");
    };
    assert_eq!(
        m,
        "`http://a.test/x` redirected (status 301) to `ftp://files.test/f`, which uses the \
         scheme `ftp`: only `http` and `https` URLs are supported"
    );
    let Err(Error::Other(m)) = next_hop(&h, 302, Some("http://[bad")) else {
        panic!("expected an error");
    };
    assert!(m.contains("which is not a valid URL"), "{m}");
}

#[test]
fn see_other_switches_to_get_without_body() {
    for method in [Method::Post, Method::Put, Method::Patch, Method::Delete] {
        let h = hop("http://a.test/form", method, Some("data"));
        let n = next_hop(&h, 303, Some("/done")).unwrap().unwrap();
        assert_eq!(n.method, Method::Get);
        assert_eq!(n.body, None);
        assert_eq!(names(&n), ["Authorization", "accept"]);
    }
    let h = hop("http://a.test/", Method::Head, None);
    assert_eq!(
        next_hop(&h, 303, Some("/")).unwrap().unwrap().method,
        Method::Head
    );
}

#[test]
fn moved_and_found_switch_only_post_to_get() {
    for status in [301, 302] {
        let h = hop("http://a.test/form", Method::Post, Some("data"));
        let n = next_hop(&h, status, Some("/new")).unwrap().unwrap();
        assert_eq!((n.method, n.body), (Method::Get, None));

        let h = hop("http://a.test/form", Method::Put, Some("data"));
        let n = next_hop(&h, status, Some("/new")).unwrap().unwrap();
        assert_eq!(n.method, Method::Put);
        assert_eq!(n.body.as_deref(), Some(&b"data"[..]));
        assert_eq!(names(&n).len(), 4);
    }
}

#[test]
fn temporary_and_permanent_redirects_keep_method_and_body() {
    for status in [307, 308] {
        let h = hop("http://a.test/form", Method::Post, Some("data"));
        let n = next_hop(&h, status, Some("/new")).unwrap().unwrap();
        assert_eq!(n.method, Method::Post);
        assert_eq!(n.body.as_deref(), Some(&b"data"[..]));
        assert_eq!(n.headers, h.headers);
        assert_eq!(n.url.as_str(), "http://a.test/new");
    }
}

#[test]
fn credentials_stay_with_their_origin() {
    let mut h = hop("https://a.test/x", Method::Get, None);
    h.headers.push(("Cookie".into(), "s=1".into()));
    let same = next_hop(&h, 302, Some("/y")).unwrap().unwrap();
    assert_eq!(same.headers, h.headers);
    for other in [
        "https://b.test/y",
        "http://a.test/y",
        "https://a.test:444/y",
    ] {
        let n = next_hop(&h, 302, Some(other)).unwrap().unwrap();
        assert_eq!(names(&n), ["accept"], "{other}");
    }
}

#[test]
fn the_chain_stops_at_the_limit_and_names_it() {
    let urls: Vec<Hop> = (0..4)
        .map(|i| hop(&format!("http://a.test/{i}"), Method::Get, None))
        .collect();
    let mut chain = Chain::new(&urls[0], 2);
    assert!(chain.follows());
    assert_eq!(chain.redirects(), 0);
    chain.follow(&urls[1]).unwrap();
    chain.follow(&urls[2]).unwrap();
    assert_eq!(chain.redirects(), 2);
    assert_eq!(
        chain.follow(&urls[3]),
        Err(Error::TooManyRedirects(
            "more than 2 redirects (the max-redirects limit): http://a.test/0 -> \
             http://a.test/1 -> http://a.test/2 -> http://a.test/3"
                .into()
        ))
    );
    let mut one = Chain::new(&urls[0], 1);
    one.follow(&urls[1]).unwrap();
    let Err(Error::TooManyRedirects(m)) = one.follow(&urls[0]) else {
        panic!("expected too-many-redirects");
    };
    assert!(m.starts_with("more than 1 redirect (the"), "{m}");
    assert!(!Chain::new(&urls[0], 0).follows());
}
