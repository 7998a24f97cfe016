//! Versioned migrations: applied once however many starters race for them.

use std::sync::{Arc, Barrier};

use toolhost_store_pg::Database;
use toolhost_tests::postgres::database;

#[test]
fn migrations_apply_once_under_concurrent_starters() {
    let Some(t) = database("migrations_apply_once_under_concurrent_starters") else {
        return;
    };
    const STARTERS: usize = 8;
    let barrier = Arc::new(Barrier::new(STARTERS));
    let starters: Vec<_> = (0..STARTERS)
        .map(|_| {
            let (url, barrier) = (t.url.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                Database::connect(&url).map(|db| db.schema_versions())
            })
        })
        .collect();
    for s in starters {
        let versions = s.join().unwrap().unwrap_or_else(|e| panic!("{e}")).unwrap();
        assert_eq!(versions, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    }
    assert_eq!(
        t.sql("SELECT count(*), min(version), max(name) FROM schema_migrations"),
        "11|1|step_calls"
    );
    assert_eq!(
        t.sql("SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'"),
        "journal_records,mcp_tasks,plan_checks,runs,schema_migrations,step_calls"
    );
    // A later start finds everything applied and changes nothing.
    let applied = t.sql("SELECT applied_at FROM schema_migrations");
    Database::connect(&t.url).unwrap();
    assert_eq!(t.sql("SELECT applied_at FROM schema_migrations"), applied);
}
