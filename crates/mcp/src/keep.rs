//! Keeping a replica's durable tasks (`durable`) while it serves: every third of the lease,
//! and at once when a stopping replica hands tasks back, it renews its leases, takes over
//! the tasks of replicas whose leases lapsed or were handed back (running each call again
//! here when its operation may run again, carrying a stateless task's program on from its
//! run's journal, else failing the task, saying why), and forgets expired tasks.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::durable::Durable;
use crate::shared::Shared;
use crate::{call, tasks};

/// Keeps `shared`'s durable tasks until `stop`; returns at once without a task database.
pub(crate) async fn keep(shared: Arc<Shared>, stop: CancellationToken) {
    let Some(durable) = shared.durable.as_ref() else {
        return;
    };
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(durable.every()) => {}
            // A stopping replica handed tasks back: take them over now, not at the next look.
            () = durable.handed_back() => {}
        }
        if let Err(e) = durable.renew().await {
            tracing::warn!(error = %e.message, "cannot renew the leases of tasks");
        }
        if let Err(e) = take_over(&shared, durable).await {
            tracing::warn!(error = %e.message, "cannot take over the tasks of lapsed replicas");
        }
        if let Err(e) = durable.forget().await {
            tracing::warn!(error = %e.message, "cannot forget expired tasks");
        }
    }
}

/// Takes over the tasks whose holders' leases lapsed: runs each again here when it may,
/// else ends it `failed`.
async fn take_over(shared: &Arc<Shared>, durable: &Durable) -> Result<(), rmcp::ErrorData> {
    for (t, ct) in durable.take_over().await? {
        let catalog = shared.catalog();
        let served = catalog.get(&t.operation);
        let args = t.args.as_deref().map(serde_json::from_str::<Value>);
        if t.operation == crate::catalog::PROGRAM {
            match args {
                Some(Ok(args)) if shared.programs.is_some() && Durable::carries_on(&t) => {
                    tokio::spawn(crate::program_call::carry_on(shared.clone(), t, args, ct));
                }
                _ => durable.fail_lost(&t, shared.programs.is_some()).await,
            }
            continue;
        }
        match args {
            Some(Ok(args)) if Durable::may_run_again(&t, served) => {
                let (shared, catalog) = (shared.clone(), catalog.clone());
                tokio::spawn(async move {
                    let entry = catalog.get(&t.operation).expect("checked above");
                    let returned =
                        call::unattended(&shared, &t.operation, entry, args, ct.clone()).await;
                    let state = tasks::ended(&t.operation, returned, ct.is_cancelled());
                    if let Some(d) = shared.durable.as_ref() {
                        d.settle(&t.id, state).await;
                    }
                });
            }
            _ => durable.fail_lost(&t, served.is_some()).await,
        }
    }
    Ok(())
}
