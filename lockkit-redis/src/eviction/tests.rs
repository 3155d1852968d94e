use super::*;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

#[test]
fn the_policy_is_read_from_either_reply() {
    let resp2 = Ok(Value::Array(vec![
        bulk("maxmemory-policy"),
        bulk("allkeys-lru"),
    ]));
    let resp3 = Ok(Value::Map(vec![(
        bulk("maxmemory-policy"),
        bulk("noeviction"),
    )]));
    assert_eq!(from_config(&resp2).as_deref(), Some("allkeys-lru"));
    assert_eq!(from_config(&resp3).as_deref(), Some("noeviction"));
    let info = Ok(bulk(
        "# Memory\r\nused_memory:1\r\nmaxmemory_policy:volatile-ttl\r\n",
    ));
    let refused = Err("ERR unknown command 'CONFIG'".to_owned());
    assert_eq!(policy(&refused, Some(&info)).as_deref(), Ok("volatile-ttl"));
    let why = policy(&refused, Some(&refused)).unwrap_err();
    assert!(why.contains("unknown command"), "{why}");
}

#[test]
fn a_refusal_names_the_setting_the_danger_and_the_fix() {
    let e = verdict(&[("Redis at h:1".into(), Ok("allkeys-lru".into()))]).unwrap_err();
    let why = refusal(&e).unwrap();
    for part in [
        "maxmemory-policy allkeys-lru",
        "fencing counters",
        "two clients",
        "CONFIG SET maxmemory-policy noeviction",
        "eviction=accept",
    ] {
        assert!(why.contains(part), "{part}: {why}");
    }
    let e = verdict(&[("m".into(), Ok("volatile-lru".into()))]).unwrap_err();
    assert!(refusal(&e).unwrap().contains("held locks"));
    assert!(verdict(&[("m".into(), Ok("noeviction".into()))]).unwrap());
    let e = verdict(&[("m".into(), Err("both refused".into()))]).unwrap_err();
    assert!(refusal(&e).unwrap().contains("cannot read"));
}
