//! The same ledger behaviour from both backends.

use std::sync::Arc;

use super::{Ledger, PgUsage, UsageLedger};
use crate::accounts::{MonthUsage, UsageStore};
use crate::clock::{month_of, next_month_start};
use crate::storage::{Backend, StorageConfig, connect};
use crate::test_postgres::Postgres;

async fn months_add_up_apart(ledger: &dyn UsageLedger) {
    let nov = 1_795_233_312_005;
    let dec = next_month_start(nov);
    let first = MonthUsage {
        run_ms: 5,
        input_tokens: 1,
        output_tokens: 2,
        cpu_ms: 3,
        http_requests: 2,
        http_bytes: 300,
    };
    let second = MonthUsage {
        run_ms: 7,
        cpu_ms: 4,
        http_requests: 1,
        http_bytes: 50,
        ..MonthUsage::default()
    };
    ledger.add("a", nov, first).await.unwrap();
    ledger.add("a", nov, second).await.unwrap();
    let december = MonthUsage {
        run_ms: 1,
        ..MonthUsage::default()
    };
    ledger.add("a", dec, december).await.unwrap();
    let november = MonthUsage {
        run_ms: 12,
        input_tokens: 1,
        output_tokens: 2,
        cpu_ms: 7,
        http_requests: 3,
        http_bytes: 350,
    };
    assert_eq!(ledger.month("a", nov).await.unwrap(), november);
    assert_eq!(ledger.month("a", dec).await.unwrap(), december);
    assert_eq!(ledger.month("b", nov).await.unwrap(), MonthUsage::default());
    assert_eq!(
        ledger.all().await.unwrap(),
        [
            ("a".to_string(), month_of(nov), november),
            ("a".to_string(), month_of(dec), december),
        ]
    );
}

#[tokio::test]
async fn months_add_up_apart_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(redb::Database::create(dir.path().join("db")).unwrap());
    months_add_up_apart(&UsageStore::new(db).unwrap()).await;
    let pg = Postgres::start();
    let config = StorageConfig {
        backend: Backend::Postgres,
        database_url: Some(pg.database("usage").into()),
        pool_size: 8,
    };
    let pool = connect(&config).await.unwrap();
    months_add_up_apart(&PgUsage::new(pool.clone())).await;

    // Nodes adding to one month at once lose none of each other's additions.
    let ledger: Ledger = Arc::new(PgUsage::new(pool));
    let adds: Vec<_> = (0..40)
        .map(|_| {
            let ledger = ledger.clone();
            tokio::spawn(async move {
                let one = MonthUsage {
                    run_ms: 1,
                    ..MonthUsage::default()
                };
                ledger.add("busy", 1_795_233_312_005, one).await
            })
        })
        .collect();
    for add in adds {
        add.await.unwrap().unwrap();
    }
    assert_eq!(
        ledger
            .month("busy", 1_795_233_312_005)
            .await
            .unwrap()
            .run_ms,
        40
    );
}
