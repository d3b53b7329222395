//! SCRAM against RFC 7677's exchange and one computed with Python's
//! hashlib, and every way an exchange must fail: wrong passwords, unknown
//! users, altered or foreign proofs, malformed messages.

use super::*;

const KEY: [u8; 32] = [7; 32];

fn client_final(
    m: ScramMechanism,
    password: &str,
    _salt: &[u8],
    _iterations: u32,
    first_bare: &str,
    server_first: &str,
    binding: &str,
) -> String {
    test_client_final(m, password, server_first, first_bare, binding)
}

fn continue_text(step: Result<ScramStep, ScramError>) -> String {
    match step {
        Ok(ScramStep::Continue(bytes)) => String::from_utf8(bytes).expect("UTF-8"),
        other => panic!("expected the server-first message, got {other:?}"),
    }
}

#[test]
fn rfc_7677_exchange() {
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt");
    let cred = ScramCredential::from_password(ScramMechanism::Sha256, "pencil", &salt, 4096)
        .expect("valid");
    assert_eq!(
        B64.encode(&cred.stored_key),
        "WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY="
    );
    assert_eq!(
        B64.encode(&cred.server_key),
        "wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU="
    );
    let mut s = ScramServer::with_nonce(
        ScramMechanism::Sha256,
        "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".into(),
        KEY,
    );
    let first = continue_text(s.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", |u| {
        (u == "user").then(|| cred.clone())
    }));
    assert_eq!(
        first,
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let fin = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    assert_eq!(
        s.step(fin, |_| None),
        Ok(ScramStep::Authenticated {
            server_final: b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=".to_vec(),
            user: "user".into()
        })
    );
    // One exchange authenticates once.
    assert_eq!(s.step(fin, |_| None), Err(ScramError::Over));
}

#[test]
fn sha_512_exchange_computed_with_python_hashlib() {
    // hashlib.pbkdf2_hmac("sha512", b"pencil", b"strata-test-salt", 4096) and hmac, by hand.
    let cred =
        ScramCredential::from_password(ScramMechanism::Sha512, "pencil", b"strata-test-salt", 4096)
            .expect("valid");
    assert_eq!(
        B64.encode(&cred.stored_key),
        "pVw4oJb3XroVNcaD17UMDQGPO8fs7lhaZIG+saPAP5HTLBbHd4B/xmZeZ1lxbidh6kd6rgaz6EoP+uAAmwZfBQ=="
    );
    let mut s = ScramServer::with_nonce(ScramMechanism::Sha512, "3rfcNHYJY1ZVvWVs7j".into(), KEY);
    let first = continue_text(s.step(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL", |_| {
        Some(cred.clone())
    }));
    assert_eq!(
        first,
        "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=c3RyYXRhLXRlc3Qtc2FsdA==,i=4096"
    );
    let fin = "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=U9lVoJTg3xMARHTNem9PiPtyVk9n7qqfS0CE/cekFgkWZx4VcMLTWXhX43Qr3i6wRNGdNW7RC6Yu88ljya+2uQ==";
    match s.step(fin.as_bytes(), |_| None) {
        Ok(ScramStep::Authenticated { server_final, user }) => {
            assert_eq!(user, "user");
            assert_eq!(
                server_final,
                b"v=pLfegEIJszvfugoihR3r0mi6gh9OTSNd2LllI5EYJpLVOFfoSQEMN5Y4DLjdO+dO6/Q3eSVHzpMJkYC3E3YL4Q==".to_vec()
            );
        }
        other => panic!("{other:?}"),
    }
}

/// Runs a whole exchange for `user` with `password` against a store that
/// holds alice's credential ("right password"); `tamper` may change the
/// final message. Returns the final step's result.
fn exchange(
    m: ScramMechanism,
    user: &str,
    password: &str,
    tamper: impl FnOnce(String) -> String,
) -> Result<ScramStep, ScramError> {
    let cred = ScramCredential::generate(m, "right password", 4096).expect("valid");
    let store = |u: &str| (u == "alice").then(|| cred.clone());
    let mut s = ScramServer::new(m, KEY).expect("random");
    let bare = format!("n={user},r=clientnonce123");
    let first = continue_text(s.step(format!("n,,{bare}").as_bytes(), store));
    let salt = first
        .split(",s=")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .map(|b| B64.decode(b).expect("b64"))
        .expect("salt");
    let fin = client_final(m, password, &salt, 4096, &bare, &first, "n,,");
    s.step(tamper(fin).as_bytes(), store)
}

#[test]
fn only_the_right_password_authenticates() {
    for m in ScramMechanism::ALL.iter().copied() {
        // The positive control: without it the refusals below prove nothing.
        assert!(
            matches!(exchange(m, "alice", "right password", |f| f), Ok(ScramStep::Authenticated { user, .. }) if user == "alice")
        );
        assert_eq!(
            exchange(m, "alice", "wrong password", |f| f),
            Err(ScramError::InvalidProof)
        );
        assert_eq!(
            exchange(m, "mallory", "right password", |f| f),
            Err(ScramError::UnknownUser)
        );
        // One proof byte flipped.
        let flip = |f: String| {
            let (head, proof) = f.rsplit_once(",p=").expect("proof");
            let mut p = B64.decode(proof).expect("b64");
            p[0] ^= 1;
            format!("{head},p={}", B64.encode(p))
        };
        assert_eq!(
            exchange(m, "alice", "right password", flip),
            Err(ScramError::InvalidProof)
        );
        let empty = |f: String| format!("{},p=", f.rsplit_once(",p=").expect("proof").0);
        assert_eq!(
            exchange(m, "alice", "right password", empty),
            Err(ScramError::InvalidProof)
        );
        let truncated = |f: String| f[..f.len() - 8].to_string() + "AAAA";
        assert!(exchange(m, "alice", "right password", truncated).is_err());
        // A proof made for another exchange's nonce.
        let foreign = |f: String| f.replace("clientnonce123", "clientnonce124");
        assert_eq!(
            exchange(m, "alice", "right password", foreign),
            Err(ScramError::NonceMismatch)
        );
        // The channel binding must repeat the header the client sent.
        let binding = |f: String| f.replacen("c=biws", &format!("c={}", B64.encode("y,,")), 1);
        assert_eq!(
            exchange(m, "alice", "right password", binding),
            Err(ScramError::ChannelBindingMismatch)
        );
    }
}

#[test]
fn a_proof_from_another_session_fails() {
    let m = ScramMechanism::Sha256;
    let cred = ScramCredential::generate(m, "pw", 4096).expect("valid");
    let bare = "n=alice,r=abc";
    let mut a = ScramServer::new(m, KEY).expect("random");
    let first_a = continue_text(a.step(format!("n,,{bare}").as_bytes(), |_| Some(cred.clone())));
    let fin_a = client_final(m, "pw", &cred.salt, 4096, bare, &first_a, "n,,");
    let mut b = ScramServer::new(m, KEY).expect("random");
    let _ = continue_text(b.step(format!("n,,{bare}").as_bytes(), |_| Some(cred.clone())));
    assert_eq!(
        b.step(fin_a.as_bytes(), |_| None),
        Err(ScramError::NonceMismatch)
    );
    assert!(matches!(
        a.step(fin_a.as_bytes(), |_| None),
        Ok(ScramStep::Authenticated { .. })
    ));
}

#[test]
fn an_unknown_user_sees_a_steady_decoy_and_the_generic_message() {
    let m = ScramMechanism::Sha512;
    let first = |user: &str| {
        let mut s = ScramServer::new(m, KEY).expect("random");
        let text = continue_text(s.step(format!("n,,n={user},r=x").as_bytes(), |_| None));
        text.split_once(",s=").expect("salt").1.to_string()
    };
    // The same salt and iterations on every attempt, another for another name.
    assert_eq!(first("mallory"), first("mallory"));
    assert_ne!(first("mallory"), first("trudy"));
    assert!(first("mallory").ends_with(",i=4096"));
    assert_eq!(
        ScramError::UnknownUser.client_message(m),
        ScramError::InvalidProof.client_message(m)
    );
    // A credential of the other hash is no credential for this one.
    let other = ScramCredential::generate(ScramMechanism::Sha256, "pw", 4096).expect("valid");
    let mut s = ScramServer::new(m, KEY).expect("random");
    let text = continue_text(s.step(b"n,,n=alice,r=x", |_| Some(other.clone())));
    assert!(!text.contains(&B64.encode(&other.salt)));
}

#[test]
fn authzid_and_escaped_names() {
    let m = ScramMechanism::Sha256;
    let mut seen = String::new();
    let mut s = ScramServer::new(m, KEY).expect("random");
    let _ = continue_text(s.step(b"n,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=x", |u| {
        seen = u.to_string();
        None
    }));
    assert_eq!(seen, "a,b=c");
    let mut s = ScramServer::new(m, KEY).expect("random");
    let e = s.step(b"n,a=admin,n=alice,r=x", |_| None).unwrap_err();
    assert_eq!(e, ScramError::AuthzidMismatch);
    assert!(e.client_message(m).contains("authorization id"));
    assert_eq!(s.step(b"anything", |_| None), Err(ScramError::Over));
}

#[test]
fn weak_stored_credentials_are_refused() {
    let mut weak = ScramCredential::generate(ScramMechanism::Sha256, "pw", 4096).expect("valid");
    weak.iterations = 1000;
    let mut s = ScramServer::new(ScramMechanism::Sha256, KEY).expect("random");
    assert!(matches!(
        s.step(b"n,,n=alice,r=x", |_| Some(weak)),
        Err(ScramError::WeakCredential {
            iterations: 1000,
            ..
        })
    ));
}

#[test]
fn credentials_are_checked_and_never_printed() {
    let m = ScramMechanism::Sha256;
    assert_eq!(
        ScramCredential::generate(m, "pw", 4095),
        Err(CredentialError::Iterations { got: 4095 })
    );
    assert_eq!(
        ScramCredential::generate(m, "pw", 16385),
        Err(CredentialError::Iterations { got: 16385 })
    );
    assert!(ScramCredential::generate(m, "pw", 16384).is_ok());
    assert_eq!(
        ScramCredential::generate(m, "", 4096),
        Err(CredentialError::EmptyPassword)
    );
    assert_eq!(
        ScramCredential::from_salted_password(m, &[0; 32], b"", 4096),
        Err(CredentialError::EmptySalt)
    );
    assert!(matches!(
        ScramCredential::from_salted_password(ScramMechanism::Sha512, &[0; 32], b"s", 4096),
        Err(CredentialError::SaltedPasswordLength {
            got: 32,
            want: 64,
            ..
        })
    ));
    let c = ScramCredential::generate(m, "pw", 4096).expect("valid");
    let shown = format!("{c:?}");
    assert!(
        !shown.contains(&format!("{:?}", c.stored_key)) && !shown.contains("stored_key"),
        "{shown}"
    );
    assert_eq!(
        ScramMechanism::from_name("SCRAM-SHA-512"),
        Some(ScramMechanism::Sha512)
    );
    assert_eq!(
        ScramMechanism::from_type_code(1),
        Some(ScramMechanism::Sha256)
    );
    assert_eq!(ScramMechanism::from_type_code(3), None);
}

#[test]
fn malformed_messages_are_errors_not_panics() {
    let firsts: &[&[u8]] = &[
        b"",
        b"n",
        b"n,",
        b"n,,",
        b"n,,n",
        b"n,,n=",
        b"n,,n=u",
        b"n,,n=u,r=",
        b"n,a,n=u,r=x",
        b"n,a=,n=u,r=x",
        b"y,,n=u,r=x",
        b"p=tls-unique,,n=u,r=x",
        b"q,,n=u,r=x",
        b"n,,m=ext,n=u,r=x",
        b"n,,n=a=b,r=x",
        b"n,,n=a=2,r=x",
        b"n,,n=a=,r=x",
        b"n,,n=\xff,r=x",
        b"\xff\xfe",
        b"n,,n=u,r=x,ext",
        b"n,,n=u,r=x,=v",
        b"n,,n=u,r=x,tokenauth=true",
        b"n,,n=u,r=a b",
        b"n,,n=\xc3\xa9,r=x",
        b"n,,r=x,n=u",
    ];
    for f in firsts {
        let mut s = ScramServer::new(ScramMechanism::Sha256, KEY).expect("random");
        assert!(
            s.step(f, |_| None).is_err(),
            "{:?}",
            String::from_utf8_lossy(f)
        );
    }
    let cred = ScramCredential::generate(ScramMechanism::Sha256, "pw", 4096).expect("valid");
    let finals: &[&[u8]] = &[
        b"",
        b"c=biws",
        b"p=",
        b"c=biws,p=",
        b"c=biws,r=,p=",
        b"c=!!,r=x,p=AA==",
        b"c=biws,r=x,p=!!!",
        b"\xff",
        b"r=x,c=biws,p=AA==",
        b",p=",
        b"c=,r=,p=,p=",
    ];
    for f in finals {
        let mut s = ScramServer::new(ScramMechanism::Sha256, KEY).expect("random");
        let _ = continue_text(s.step(b"n,,n=alice,r=x", |_| Some(cred.clone())));
        assert!(
            s.step(f, |_| None).is_err(),
            "{:?}",
            String::from_utf8_lossy(f)
        );
    }
}

/// Real exchanges with one to three bytes of one message changed (each
/// change a real one): none authenticates, none panics, and most reach
/// the final message, so the final check is what refuses them.
#[test]
fn mutated_exchanges_never_authenticate_or_panic() {
    let m = ScramMechanism::Sha256;
    let cred = ScramCredential::generate(m, "pw", 4096).expect("valid");
    let bare = "n=alice,r=clientnonce";
    let client_key = m.mac(&salted_password(m, b"pw", &cred.salt, 4096), b"Client Key");
    let stored_key = m.hash(&client_key);
    let mut seed: u64 = 0xdecaf;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % n as u64) as usize
    };
    let mut reached_final = 0;
    let mut refused_at_final = 0;
    for round in 0..4_000 {
        let mutate_first = round % 2 == 0;
        let mut first = format!("n,,{bare}").into_bytes();
        let mut changes = Vec::new();
        for _ in 0..1 + next(3) {
            changes.push((next(1 << 16), 1 + next(255) as u8));
        }
        let apply = |msg: &mut Vec<u8>| {
            for (at, x) in &changes {
                let i = at % msg.len();
                msg[i] ^= x;
            }
        };
        if mutate_first {
            apply(&mut first);
            if first == format!("n,,{bare}").into_bytes() {
                continue; // two changes undid each other: a real exchange
            }
        }
        let mut s = ScramServer::new(m, KEY).expect("random");
        let Ok(ScramStep::Continue(server_first)) = s.step(&first, |_| Some(cred.clone())) else {
            continue;
        };
        reached_final += 1;
        let server_first = String::from_utf8(server_first).expect("UTF-8");
        // The client's proof, from keys derived once (PBKDF2 is slow in a debug build).
        let nonce = server_first
            .split(',')
            .next()
            .and_then(|r| r.strip_prefix("r="))
            .expect("nonce");
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{bare},{server_first},{without_proof}");
        let sig = m.mac(&stored_key, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        let mut fin = format!("{without_proof},p={}", B64.encode(proof)).into_bytes();
        if !mutate_first {
            let before = fin.clone();
            apply(&mut fin);
            if fin == before {
                continue; // two changes undid each other: a real exchange
            }
        }
        let result = s.step(&fin, |_| None);
        assert!(
            !matches!(result, Ok(ScramStep::Authenticated { .. })),
            "round {round}: {:?} then {:?}",
            String::from_utf8_lossy(&first),
            String::from_utf8_lossy(&fin)
        );
        refused_at_final += 1;
    }
    assert!(reached_final > 2_000, "{reached_final}");
    assert!(refused_at_final > 2_000, "{refused_at_final}");
}

/// librdkafka before 2.6.1 repeats its nonce in the final message
/// (`r=<client nonce><client nonce><server nonce>`), signed as sent: Kafka
/// 3.9 accepts it and so does Strata; any other prefix is refused, and the
/// proof must still be right.
#[test]
fn librdkafka_before_2_6_1_doubled_nonce() {
    let m = ScramMechanism::Sha512;
    let cred = ScramCredential::generate(m, "pw", 4096).expect("valid");
    let bare = "n=alice,r=clientnonce";
    for (prefix, password, accepted) in [
        ("clientnonce", "pw", true),
        ("clientnonce", "wrong", false),
        ("clientnoncX", "pw", false),
        ("", "pw", true),
    ] {
        let mut s = ScramServer::with_nonce(m, "SERVERNONCE".into(), KEY);
        let Ok(ScramStep::Continue(first)) =
            s.step(format!("n,,{bare}").as_bytes(), |_| Some(cred.clone()))
        else {
            panic!("no server-first message");
        };
        let first = String::from_utf8(first).expect("UTF-8");
        let nonce = first
            .split(',')
            .next()
            .and_then(|r| r.strip_prefix("r="))
            .expect("nonce");
        // Signed as sent: the auth message holds the doubled nonce.
        let without_proof = format!("c=biws,r={prefix}{nonce}");
        let salted = salted_password(m, password.as_bytes(), &cred.salt, 4096);
        let client_key = m.mac(&salted, b"Client Key");
        let auth = format!("{bare},{first},{without_proof}");
        let sig = m.mac(&m.hash(&client_key), auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        let auth_ok = format!("{without_proof},p={}", B64.encode(proof));
        let result = s.step(auth_ok.as_bytes(), |_| None);
        assert_eq!(
            matches!(result, Ok(ScramStep::Authenticated { .. })),
            accepted,
            "prefix {prefix:?}, password {password}: {result:?}"
        );
    }
}
