//! Leases and fencing: a writer whose lease was taken over can append nothing, renew
//! nothing and release nothing; claimers racing for one run get exactly one winner; a
//! taken `seq` is refused.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;
use toolhost_journal::store::Store;
use toolhost_journal::{Journal, Redactor};
use toolhost_store_pg::{Fenced, PgError, RunState};

use super::{LONG, connected, line, run_start, store, store_error};

#[test]
fn a_writer_whose_lease_was_taken_over_can_write_nothing() {
    let Some((t, db)) = connected("a_writer_whose_lease_was_taken_over_can_write_nothing") else {
        return;
    };
    let short = Duration::from_millis(400);
    let a = db.create_run("r1", "writer-a", short).unwrap();
    assert_eq!(a.epoch, 1);
    let mut a_store = store(&db, &a);
    a_store.append(1, &line(1)).unwrap();
    // While A's lease runs, nobody else gets the run.
    match db.claim("r1", "writer-b", LONG) {
        Err(PgError::NotClaimable { why, .. }) => {
            assert!(
                why.starts_with("its lease is held by `writer-a` until "),
                "{why}"
            )
        }
        other => panic!("claimed a held lease: {other:?}"),
    }
    std::thread::sleep(short + Duration::from_millis(300));
    let b = db.claim("r1", "writer-b", LONG).unwrap();
    assert_eq!(b.epoch, 2, "a takeover bumps the epoch");
    store(&db, &b).append(2, &line(2)).unwrap();

    let e = a_store.append(3, &line(3)).unwrap_err();
    let PgError::Fenced(Fenced { run, epoch, why }) = store_error(&e) else {
        panic!("not fenced: {e}");
    };
    assert_eq!((run.as_str(), *epoch), ("r1", 1));
    assert_eq!(why, "the run was taken over by `writer-b` at epoch 2");
    assert_eq!(
        e.to_string(),
        "run `r1` is fenced off for this writer (lease epoch 1): the run was taken over by `writer-b` at epoch 2; nothing was written"
    );
    assert!(matches!(db.renew(&a), Err(PgError::Fenced(_))));
    assert!(matches!(
        db.release(&a, RunState::Stopped),
        Err(PgError::Fenced(_))
    ));
    // Nothing of A's landed after the takeover; B still holds the run.
    assert_eq!(
        t.sql("SELECT string_agg(seq::text || '=' || convert_from(line, 'UTF8'), '' ORDER BY seq) FROM journal_records"),
        "1={\"seq\":1}\n2={\"seq\":2}"
    );
    assert_eq!(
        t.sql("SELECT lease_owner, epoch, state FROM runs WHERE id = 'r1'"),
        "writer-b|2|active"
    );
    db.renew(&b).unwrap();
    db.release(&b, RunState::Stopped).unwrap();
    assert_eq!(
        t.sql("SELECT coalesce(lease_owner, '-'), state FROM runs"),
        "-|stopped"
    );
    // A stopped run is claimed by nobody.
    assert!(matches!(
        db.claim("r1", "writer-c", LONG),
        Err(PgError::NotClaimable { .. })
    ));
}

#[test]
fn an_expired_lease_writes_nothing_even_before_a_takeover() {
    let Some((t, db)) = connected("an_expired_lease_writes_nothing_even_before_a_takeover") else {
        return;
    };
    let a = db
        .create_run("r1", "writer-a", Duration::from_millis(200))
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let e = store(&db, &a).append(1, &line(1)).unwrap_err();
    match store_error(&e) {
        PgError::Fenced(f) => assert_eq!(f.why, "the lease expired"),
        other => panic!("{other}"),
    }
    assert_eq!(t.sql("SELECT count(*) FROM journal_records"), "0");
}

/// The journal surfaces a fenced append as a failed journal (the engine then stops the
/// run `journal_failed`), and writes nothing after it.
#[test]
fn the_journal_fails_when_its_writer_is_fenced() {
    let Some((t, db)) = connected("the_journal_fails_when_its_writer_is_fenced") else {
        return;
    };
    let short = Duration::from_millis(400);
    let a = db.create_run("r1", "writer-a", short).unwrap();
    let start = run_start();
    let redactor = Redactor::new(std::iter::empty::<String>(), &[]).unwrap();
    let journal = Journal::create_in(Box::new(store(&db, &a)), "r1", &start, redactor).unwrap();
    journal.resumed(&json!({"n": 2}));
    assert_eq!(journal.error(), None);
    std::thread::sleep(short + Duration::from_millis(300));
    db.claim("r1", "writer-b", LONG).unwrap();
    journal.resumed(&json!({"n": 3}));
    journal.resumed(&json!({"n": 4}));
    let err = journal.error().expect("the journal failed");
    assert!(
        err.contains("is fenced off for this writer (lease epoch 1)"),
        "{err}"
    );
    assert_eq!(journal.records(), 2);
    assert_eq!(t.sql("SELECT max(seq) FROM journal_records"), "2");
    // What was written is a valid chain that ends at the journal's head.
    let v = db.verify("r1", Some(&journal.head())).unwrap();
    assert_eq!((v.problem, v.records.len()), (None, 2));
}

#[test]
fn claimers_racing_for_one_run_get_exactly_one_winner() {
    let Some((_t, db)) = connected("claimers_racing_for_one_run_get_exactly_one_winner") else {
        return;
    };
    const CLAIMERS: usize = 8;
    for round in 0..10 {
        let run = format!("r{round}");
        let first = db.create_run(&run, "creator", LONG).unwrap();
        db.release(&first, RunState::Active).unwrap();
        let barrier = Arc::new(Barrier::new(CLAIMERS));
        let claimers: Vec<_> = (0..CLAIMERS)
            .map(|i| {
                let (db, run, barrier) = (db.clone(), run.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    db.claim(&run, &format!("claimer-{i}"), LONG)
                })
            })
            .collect();
        let results: Vec<_> = claimers.into_iter().map(|c| c.join().unwrap()).collect();
        let won: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(won.len(), 1, "round {round}: {results:?}");
        assert_eq!(won[0].epoch, 2);
        for r in &results {
            if let Err(e) = r {
                assert!(matches!(e, PgError::NotClaimable { .. }), "{e}");
            }
        }
    }
}

#[test]
fn claim_next_hands_each_free_run_to_one_claimer() {
    let Some((_t, db)) = connected("claim_next_hands_each_free_run_to_one_claimer") else {
        return;
    };
    const RUNS: usize = 5;
    const CLAIMERS: usize = 8;
    for i in 0..RUNS {
        let l = db.create_run(&format!("r{i}"), "creator", LONG).unwrap();
        db.release(&l, RunState::Active).unwrap();
    }
    // One run held by someone else and one stopped: neither is handed out.
    db.create_run("held", "other", LONG).unwrap();
    let s = db.create_run("done", "other", LONG).unwrap();
    db.release(&s, RunState::Stopped).unwrap();
    let barrier = Arc::new(Barrier::new(CLAIMERS));
    let claimers: Vec<_> = (0..CLAIMERS)
        .map(|i| {
            let (db, barrier) = (db.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                db.claim_next(&format!("claimer-{i}"), LONG).unwrap()
            })
        })
        .collect();
    let mut got: Vec<String> = claimers
        .into_iter()
        .filter_map(|c| c.join().unwrap())
        .map(|l| l.run)
        .collect();
    got.sort();
    let want: Vec<String> = (0..RUNS).map(|i| format!("r{i}")).collect();
    assert_eq!(got, want, "every free run once, nothing else");
    assert_eq!(db.claim_next("late", LONG).unwrap(), None);
}

#[test]
fn the_run_of_an_mcp_task_is_left_to_the_mcp_replicas_one_per_task() {
    let Some((_t, db)) =
        connected("the_run_of_an_mcp_task_is_left_to_the_mcp_replicas_one_per_task")
    else {
        return;
    };
    // Its holder died: the lease lapsed, yet no worker claims it.
    let short = Duration::from_millis(50);
    let l = db
        .create_run_of_task("p1", "task-1", "mcp-a", short)
        .unwrap();
    std::thread::sleep(short * 3);
    assert_eq!(db.claim_next("worker", LONG).unwrap(), None);
    assert_eq!(db.run_of_task("task-1").unwrap().as_deref(), Some("p1"));
    assert_eq!(db.run_of_task("task-2").unwrap(), None);
    // One run per task: a second holder starting it again is refused, naming the task.
    let e = db
        .create_run_of_task("p2", "task-1", "mcp-b", LONG)
        .unwrap_err();
    assert!(
        matches!(&e, PgError::TaskHasRun { task } if task == "task-1"),
        "{e}"
    );
    // The replica taking the task over claims it by id, fencing the one that lapsed.
    let taken = db.claim_to_resume("p1", "mcp-b", LONG).unwrap();
    assert_eq!(taken.epoch, l.epoch + 1);
}

#[test]
fn a_taken_seq_is_refused_and_the_first_record_kept() {
    let Some((t, db)) = connected("a_taken_seq_is_refused_and_the_first_record_kept") else {
        return;
    };
    let a = db.create_run("r1", "writer-a", LONG).unwrap();
    let mut s = store(&db, &a);
    s.append(1, b"first\n").unwrap();
    let e = s.append(1, b"second\n").unwrap_err();
    assert!(
        matches!(store_error(&e), PgError::SeqTaken { run, seq: 1 } if run == "r1"),
        "{e}"
    );
    assert_eq!(e.to_string(), "run `r1`: record 1 is already written");
    assert_eq!(
        t.sql("SELECT convert_from(line, 'UTF8') FROM journal_records"),
        "first"
    );
    assert!(matches!(
        db.create_run("r1", "writer-b", LONG),
        Err(PgError::RunExists { .. })
    ));
}

#[test]
fn a_kept_lease_outlives_its_ttl_and_lapses_once_no_longer_renewed() {
    let Some((_t, db)) =
        connected("a_kept_lease_outlives_its_ttl_and_lapses_once_no_longer_renewed")
    else {
        return;
    };
    let ttl = Duration::from_millis(600);
    let a = db.create_run("r1", "writer-a", ttl).unwrap();
    let renewer = db.keep(&a);
    let mut s = store(&db, &a);
    for seq in 1..=4 {
        std::thread::sleep(ttl / 2);
        s.append(seq, &line(seq)).unwrap();
    }
    assert!(matches!(
        db.claim("r1", "writer-b", LONG),
        Err(PgError::NotClaimable { .. })
    ));
    drop(renewer);
    std::thread::sleep(ttl + Duration::from_millis(300));
    let e = s.append(5, &line(5)).unwrap_err();
    assert!(matches!(store_error(&e), PgError::Fenced(_)), "{e}");
    assert_eq!(db.claim("r1", "writer-b", LONG).unwrap().epoch, 2);
}

/// The engine calls `Store::append` from async code: from inside a current-thread
/// runtime (whose only thread blocks in the append) it neither deadlocks nor panics, and
/// the database may be dropped there too.
#[test]
fn appends_work_from_inside_a_current_thread_runtime() {
    let Some((t, db)) = connected("appends_work_from_inside_a_current_thread_runtime") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let a = db.create_run("r1", "writer-a", LONG).unwrap();
        let _renewer = db.keep(&a);
        let mut s = store(&db, &a);
        for seq in 1..=3 {
            s.append(seq, &line(seq)).unwrap();
            tokio::task::yield_now().await;
        }
        drop(s);
        drop(db);
    });
    assert_eq!(t.sql("SELECT count(*) FROM journal_records"), "3");
}
