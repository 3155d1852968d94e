use super::*;

#[test]
fn the_rest_of_a_secret_split_at_an_ampersand_is_never_named() {
    for query in ["password=AAa&a0aAaA&b=1", "token=&Ab0aAaA=?a0!&b=1"] {
        let mut q = Query::parse(&format!("x://h?{query}"), query);
        q.take("password").unwrap();
        q.take("token").unwrap();
        q.take("b").unwrap();
        let e = q.finish().unwrap_err().to_string();
        assert!(!e.contains("a0aAaA") && !e.contains("Ab0aAaA"), "{e}");
        assert!(e.contains("%26"), "{e}");
    }
    let query = "token=a&connect_timeout_ms=s3cret";
    let mut q = Query::parse(&format!("x://h?{query}"), query);
    q.take("token").unwrap();
    let e = q
        .take_millis("connect_timeout_ms", 1..=10)
        .unwrap_err()
        .to_string();
    assert!(!e.contains("s3cret"), "{e}");
}

#[test]
fn an_unknown_option_is_named_with_the_known_ones() {
    let mut q = Query::parse("x://h?prefx=a&prefix=b", "prefx=a&prefix=b");
    assert_eq!(q.take("prefix").unwrap().as_deref(), Some("b"));
    q.take("wake").unwrap();
    let e = q.finish().unwrap_err().to_string();
    assert!(
        e.contains("unknown option `prefx` (did you mean `prefix`?)"),
        "{e}"
    );
    assert!(e.contains("the options are: prefix, wake"), "{e}");
}

#[test]
fn a_repeated_option_is_refused() {
    let mut q = Query::parse("x://h?a=1&a=2", "a=1&a=2");
    assert!(q.take("a").unwrap_err().to_string().contains("twice"));
}

#[test]
fn client_options_pass_through_as_written() {
    let mut q = Query::parse("x://h?sslmode=require&table=t", "sslmode=require&table=t");
    assert_eq!(q.take("table").unwrap().as_deref(), Some("t"));
    assert_eq!(q.finish_passing(&["sslmode"]).unwrap(), ["sslmode=require"]);
}

#[test]
fn values_are_decoded_and_checked() {
    let mut q = Query::parse("x://h?p=a%20b&n=7&c=poll", "p=a%20b&n=7&c=poll");
    assert_eq!(q.take("p").unwrap().as_deref(), Some("a b"));
    assert_eq!(
        q.take_millis("n", 1..=10).unwrap(),
        Some(Duration::from_millis(7))
    );
    assert_eq!(
        q.take_choice("c", &[("notify", 1), ("poll", 2)]).unwrap(),
        Some(2)
    );
    let mut q = Query::parse("x://h?n=0&c=x", "n=0&c=x");
    assert!(q.take_millis("n", 1..=10).is_err());
    let e = q.take_choice("c", &[("a", 1), ("b", 2)]).unwrap_err();
    assert!(e.to_string().contains("must be a or b"), "{e}");
}

#[test]
fn a_secret_looking_name_is_not_repeated() {
    let q = Query::parse("x://h?p@ss=1", "p@ss=1");
    let e = q.finish().unwrap_err().to_string();
    assert!(e.contains("an unknown option"), "{e}");
    assert!(e.contains("takes no options"), "{e}");
}
