//! The authorizer's decisions, case by case as Kafka's authorizer tests
//! state them, and the indexed lookup against a plain scan of every
//! binding over generated sets.

use super::*;
use crate::acl::{
    AccessControlEntry, AclBindingFilter, PatternTypeFilter, ResourcePatternFilter, CLUSTER_NAME,
};
use AclOperation::*;
use AclPermissionType::*;
use PatternType::*;
use ResourceType::*;

fn bind(
    t: ResourceType,
    name: &str,
    p: PatternType,
    who: &str,
    host: &str,
    op: AclOperation,
    perm: AclPermissionType,
) -> AclBinding {
    AclBinding::new(
        ResourcePattern::new(t, name, p),
        AccessControlEntry::new(who, host, op, perm),
    )
}

fn authorizer(bindings: Vec<AclBinding>, allow_if_none: bool, supers: &str) -> Authorizer {
    let mut set = AclSet::new();
    for b in bindings {
        set.insert(b);
    }
    let config = AuthorizerConfig {
        super_users: parse_super_users(supers).expect("valid super users"),
        allow_everyone_if_no_acl_found: allow_if_none,
    };
    Authorizer::new(config, set)
}

fn alice() -> Requester {
    Requester::new(KafkaPrincipal::user("alice"), "10.0.0.1")
}

fn allowed(a: &Authorizer, who: &Requester, op: AclOperation, t: ResourceType, name: &str) -> bool {
    a.authorize(who, op, t, name).allowed
}

#[test]
fn without_bindings_the_default_decides() {
    let closed = authorizer(vec![], false, "");
    let open = authorizer(vec![], true, "");
    assert_eq!(
        closed.authorize(&alice(), Read, Topic, "t"),
        Decision {
            allowed: false,
            rule: Rule::NoAclsOnResource
        }
    );
    assert!(allowed(&open, &alice(), Read, Topic, "t"));
}

#[test]
fn a_binding_for_someone_else_closes_the_resource_even_when_open_by_default() {
    let a = authorizer(
        vec![bind(Topic, "t", Literal, "User:bob", "*", Read, Allow)],
        true,
        "",
    );
    assert_eq!(
        a.authorize(&alice(), Read, Topic, "t"),
        Decision {
            allowed: false,
            rule: Rule::NoMatchingAllow
        }
    );
    // Other resources are still open.
    assert!(allowed(&a, &alice(), Read, Topic, "u"));
    // A prefixed binding covers the names it prefixes, and only those.
    let a = authorizer(
        vec![bind(Topic, "pay", Prefixed, "User:bob", "*", Read, Allow)],
        true,
        "",
    );
    assert!(!allowed(&a, &alice(), Read, Topic, "payments"));
    assert!(allowed(&a, &alice(), Read, Topic, "pa"));
}

#[test]
fn deny_wins_over_any_allow() {
    let a = authorizer(
        vec![
            bind(Topic, "*", Literal, "User:*", "*", All, Allow),
            bind(Topic, "pay", Prefixed, "User:alice", "*", Read, Allow),
            bind(Topic, "payments", Literal, "User:alice", "*", Read, Deny),
        ],
        false,
        "",
    );
    let d = a.authorize(&alice(), Read, Topic, "payments");
    assert!(!d.allowed);
    assert_eq!(
        d.rule,
        Rule::Binding(bind(
            Topic,
            "payments",
            Literal,
            "User:alice",
            "*",
            Read,
            Deny
        ))
    );
    assert!(allowed(&a, &alice(), Read, Topic, "payroll"));
    // A wildcard DENY refuses every name, a DENY on ALL every operation.
    let a = authorizer(
        vec![
            bind(Topic, "t", Literal, "User:alice", "*", Read, Allow),
            bind(Topic, "*", Literal, "User:*", "*", All, Deny),
        ],
        false,
        "",
    );
    assert!(!allowed(&a, &alice(), Read, Topic, "t"));
}

#[test]
fn implied_operations_widen_allows_but_never_denies() {
    let a = authorizer(
        vec![
            bind(Topic, "t", Literal, "User:alice", "*", Read, Allow),
            bind(Topic, "c", Literal, "User:alice", "*", AlterConfigs, Allow),
        ],
        false,
        "",
    );
    assert!(allowed(&a, &alice(), Describe, Topic, "t"));
    assert!(!allowed(&a, &alice(), Write, Topic, "t"));
    assert!(allowed(&a, &alice(), DescribeConfigs, Topic, "c"));
    assert!(!allowed(&a, &alice(), Describe, Topic, "c"));
    for op in [Write, Delete, Alter] {
        let a = authorizer(
            vec![bind(Group, "g", Literal, "User:alice", "*", op, Allow)],
            false,
            "",
        );
        assert!(
            allowed(&a, &alice(), Describe, Group, "g"),
            "{op} implies DESCRIBE"
        );
    }
    // DENY READ leaves DESCRIBE to the ALLOW ALL.
    let a = authorizer(
        vec![
            bind(Topic, "t", Literal, "User:alice", "*", All, Allow),
            bind(Topic, "t", Literal, "User:alice", "*", Read, Deny),
        ],
        false,
        "",
    );
    assert!(!allowed(&a, &alice(), Read, Topic, "t"));
    assert!(allowed(&a, &alice(), Describe, Topic, "t"));
    assert!(allowed(&a, &alice(), Write, Topic, "t"));
}

#[test]
fn principals_hosts_and_patterns_match_exactly() {
    let a = authorizer(
        vec![
            bind(Topic, "t", Literal, "User:alice", "10.0.0.2", Read, Allow),
            bind(Topic, "*", Prefixed, "User:alice", "*", Read, Allow),
            bind(Group, "g", Literal, "User:*", "*", Read, Allow),
        ],
        false,
        "",
    );
    // Another host.
    assert!(!allowed(&a, &alice(), Read, Topic, "t"));
    assert!(allowed(
        &a,
        &Requester::new(KafkaPrincipal::user("alice"), "10.0.0.2"),
        Read,
        Topic,
        "t"
    ));
    // A prefixed `*` is no wildcard: it prefixes names that begin with `*`.
    assert!(allowed(&a, &alice(), Read, Topic, "*x"));
    // User:* is every user; the principal's type counts.
    assert!(allowed(
        &a,
        &Requester::new(KafkaPrincipal::user("zed"), "h"),
        Read,
        Group,
        "g"
    ));
    let a = authorizer(
        vec![bind(Group, "g", Literal, "User:alice", "*", Read, Allow)],
        false,
        "",
    );
    assert!(!allowed(
        &a,
        &Requester::new(KafkaPrincipal::new("Group", "alice"), "10.0.0.1"),
        Read,
        Group,
        "g"
    ));
    // Names are case-sensitive; resource types are apart.
    assert!(!allowed(&a, &alice(), Read, Group, "G"));
    assert!(!allowed(&a, &alice(), Read, Topic, "g"));
}

#[test]
fn super_users_pass_every_deny() {
    let a = authorizer(
        vec![bind(
            Cluster,
            CLUSTER_NAME,
            Literal,
            "User:*",
            "*",
            All,
            Deny,
        )],
        false,
        " User:admin ; User:broker;",
    );
    let admin = Requester::new(KafkaPrincipal::user("admin"), "h");
    assert_eq!(
        a.authorize(&admin, Alter, Cluster, CLUSTER_NAME).rule,
        Rule::SuperUser
    );
    assert!(!allowed(&a, &alice(), Describe, Cluster, CLUSTER_NAME));
    assert!(parse_super_users("User:a;admin").is_err());
    assert_eq!(parse_super_users("").expect("empty is none"), vec![]);
}

#[test]
fn prefixes_follow_character_boundaries() {
    let a = authorizer(
        vec![
            bind(Topic, "é", Prefixed, "User:alice", "*", Read, Allow),
            bind(Topic, "a", Prefixed, "User:alice", "*", Read, Allow),
        ],
        false,
        "",
    );
    assert!(allowed(&a, &alice(), Read, Topic, "ét"));
    // Length 1 (of "a") falls inside "é": skipped, never a panic.
    assert!(!allowed(&a, &alice(), Read, Topic, "èt"));
    assert!(allowed(&a, &alice(), Read, Topic, "at"));
}

#[test]
fn authorized_operations_are_kip_430_bit_fields() {
    // A broker without an authorizer answers these (Kafka 4.4 does too).
    assert_eq!(all_operations(Topic), 3576);
    assert_eq!(all_operations(Group), 3400);
    assert_eq!(all_operations(Cluster), 8096);
    let a = authorizer(
        vec![bind(Topic, "t", Literal, "User:alice", "*", Read, Allow)],
        false,
        "",
    );
    assert_eq!(
        a.authorized_operations(&alice(), Topic, "t"),
        (1 << 3) | (1 << 8)
    );
    assert_eq!(a.authorized_operations(&alice(), Topic, "u"), 0);
    let a = authorizer(
        vec![bind(Topic, "t", Literal, "User:alice", "*", All, Allow)],
        false,
        "",
    );
    assert_eq!(
        a.authorized_operations(&alice(), Topic, "t"),
        all_operations(Topic)
    );
}

#[test]
fn by_resource_type_follows_kafkas_rules() {
    let check = |bindings: Vec<AclBinding>, op: AclOperation| {
        authorizer(bindings, false, "User:admin").authorize_by_resource_type(&alice(), op, Topic)
    };
    let allow = |name: &str, p| bind(Topic, name, p, "User:alice", "*", Write, Allow);
    let deny = |name: &str, p| bind(Topic, name, p, "User:alice", "*", Write, Deny);
    assert!(!check(vec![], Write));
    assert!(authorizer(vec![], true, "").authorize_by_resource_type(&alice(), Write, Topic));
    assert!(
        authorizer(vec![], false, "User:alice").authorize_by_resource_type(&alice(), Write, Topic)
    );
    assert!(check(vec![allow("t1", Literal)], Write));
    assert!(!check(
        vec![allow("t1", Literal), deny("t1", Literal)],
        Write
    ));
    assert!(check(
        vec![allow("t1", Literal), deny("t2", Literal)],
        Write
    ));
    assert!(!check(
        vec![allow("t1", Literal), deny("t", Prefixed)],
        Write
    ));
    assert!(!check(
        vec![allow("top", Prefixed), deny("to", Prefixed)],
        Write
    ));
    assert!(check(
        vec![allow("to", Prefixed), deny("top", Prefixed)],
        Write
    ));
    assert!(!check(vec![allow("*", Literal), deny("*", Literal)], Write));
    assert!(check(vec![allow("*", Literal), deny("t", Prefixed)], Write));
    // Only the operation itself or ALL counts here, not what implies it.
    assert!(!check(vec![allow("t1", Literal)], Read));
    assert!(check(
        vec![bind(Topic, "t1", Literal, "User:alice", "*", All, Allow)],
        Read
    ));
    assert!(!check(
        vec![bind(Topic, "t1", Literal, "User:bob", "*", Write, Allow)],
        Write
    ));
    assert!(!check(
        vec![bind(
            Topic,
            "t1",
            Literal,
            "User:alice",
            "10.9.9.9",
            Write,
            Allow
        )],
        Write
    ));
}

#[test]
fn the_set_keeps_one_copy_and_forgets_removed_prefixes() {
    let b = bind(Topic, "pay", Prefixed, "User:alice", "*", Read, Allow);
    let c = bind(Topic, "pax", Prefixed, "User:alice", "*", Read, Allow);
    let mut set = AclSet::new();
    assert!(set.insert(b.clone()));
    assert!(!set.insert(b.clone()));
    assert!(set.insert(c.clone()));
    assert_eq!(set.len(), 2);
    assert!(set.remove(&b));
    assert!(!set.remove(&b));
    let a = Authorizer::new(AuthorizerConfig::default(), set.clone());
    assert!(!allowed(&a, &alice(), Read, Topic, "payments"));
    assert!(allowed(&a, &alice(), Read, Topic, "paxos"));
    assert!(set.remove(&c));
    assert!(set.is_empty());
    assert!(set
        .types
        .get(&Topic)
        .is_some_and(|t| t.prefix_lengths.is_empty()));

    let mut set = AclSet::new();
    set.insert(bind(Topic, "b", Literal, "User:a", "*", Read, Allow));
    set.insert(bind(Topic, "a", Prefixed, "User:a", "*", Read, Allow));
    set.insert(bind(Group, "a", Literal, "User:a", "*", Read, Allow));
    let topics = AclBindingFilter {
        pattern: ResourcePatternFilter {
            resource_type: Some(Topic),
            name: None,
            pattern_type: PatternTypeFilter::Any,
        },
        entry: Default::default(),
    };
    let names: Vec<_> = set
        .matching(&topics)
        .into_iter()
        .map(|b| (b.pattern.name, b.pattern.pattern_type))
        .collect();
    assert_eq!(
        names,
        vec![("a".to_string(), Prefixed), ("b".to_string(), Literal)]
    );
    assert_eq!(set.matching(&AclBindingFilter::ANY).len(), 3);
}

/// The rules as the module comment states them, over every binding: what
/// the indexed lookup must agree with.
fn reference(
    bindings: &[AclBinding],
    cfg: &AuthorizerConfig,
    who: &Requester,
    op: AclOperation,
    t: ResourceType,
    name: &str,
) -> bool {
    let principal = who.principal.to_string();
    if cfg.super_users.iter().any(|s| s.to_string() == principal) {
        return true;
    }
    let covering: Vec<&AclBinding> = bindings
        .iter()
        .filter(|b| b.pattern.resource_type == t && b.pattern.covers(name))
        .collect();
    let applying = covering
        .iter()
        .filter(|b| b.entry.names_principal(&principal) && b.entry.names_host(&who.host));
    let mut any_allow = false;
    for b in applying {
        match b.entry.permission {
            Deny if b.entry.operation == op || b.entry.operation == All => return false,
            Allow if b.entry.operation.allow_grants(op) => any_allow = true,
            _ => {}
        }
    }
    any_allow || (covering.is_empty() && cfg.allow_everyone_if_no_acl_found)
}

/// A small deterministic generator (no dependency for one test).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

#[test]
fn indexed_decisions_equal_a_scan_of_every_binding() {
    let names = ["*", "a", "ab", "abc", "b", "ba", "é", "éa"];
    let principals = ["User:alice", "User:bob", "User:*", "Group:alice"];
    let hosts = ["*", "10.0.0.1", "10.0.0.2"];
    let types = [Topic, Group];
    let ops = AclOperation::ALL;
    let mut rng = Lcg(0x5eed);
    let mut checked = 0;
    for round in 0..400 {
        let n = rng.next(8);
        let mut bindings = Vec::new();
        let mut set = AclSet::new();
        for _ in 0..n {
            let b = bind(
                types[rng.next(types.len())],
                names[rng.next(names.len())],
                if rng.next(2) == 0 { Literal } else { Prefixed },
                principals[rng.next(principals.len())],
                hosts[rng.next(hosts.len())],
                ops[rng.next(ops.len())],
                if rng.next(3) == 0 { Deny } else { Allow },
            );
            if set.insert(b.clone()) {
                bindings.push(b);
            }
        }
        // Remove some again, so removal's bookkeeping is exercised too.
        if !bindings.is_empty() && rng.next(2) == 0 {
            let gone = bindings.swap_remove(rng.next(bindings.len()));
            assert!(set.remove(&gone));
        }
        let cfg = AuthorizerConfig {
            super_users: if round % 7 == 0 {
                vec![KafkaPrincipal::user("bob")]
            } else {
                vec![]
            },
            allow_everyone_if_no_acl_found: round % 2 == 0,
        };
        let a = Authorizer::new(cfg.clone(), set);
        assert_eq!(a.acls().len(), bindings.len());
        for who in ["alice", "bob", "carol"] {
            for host in ["10.0.0.1", "10.0.0.2"] {
                let req = Requester::new(KafkaPrincipal::user(who), host);
                for t in types {
                    for name in ["a", "abc", "abd", "ba", "éa", "x", "*"] {
                        for op in ops.iter().filter(|o| **o != All) {
                            let want = reference(&bindings, &cfg, &req, *op, t, name);
                            let got = a.authorize(&req, *op, t, name).allowed;
                            assert_eq!(
                                got, want,
                                "{who}@{host} {op} {t}:{name} over {bindings:#?}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 100_000, "{checked}");
}

#[test]
fn create_and_delete_as_the_acl_apis_do() {
    let mut set = AclSet::new();
    let a = bind(Topic, "t", Literal, "User:a", "*", Read, Allow);
    let b = bind(Topic, "t", Prefixed, "User:b", "*", Write, Deny);
    let bad = bind(Cluster, "c", Literal, "User:a", "*", Alter, Allow);
    let r = set.create(vec![a.clone(), a.clone(), bad, b.clone()]);
    assert_eq!(
        r.iter().map(Result::is_ok).collect::<Vec<_>>(),
        vec![true, true, false, true]
    );
    assert_eq!(set.len(), 2);
    let by_topic = AclBindingFilter {
        pattern: ResourcePatternFilter {
            resource_type: Some(Topic),
            name: Some("t".into()),
            pattern_type: PatternTypeFilter::Match,
        },
        entry: Default::default(),
    };
    let allows = AclBindingFilter {
        pattern: ResourcePatternFilter::ANY,
        entry: crate::acl::AccessControlEntryFilter {
            permission: Some(Allow),
            ..Default::default()
        },
    };
    let deleted = set.delete(&[by_topic, allows]);
    assert_eq!(deleted[0], vec![a.clone(), b]);
    assert_eq!(deleted[1], vec![a]);
    assert!(set.is_empty());
}
