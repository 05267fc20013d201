//! The spent-token ledger: a token spent once across every replica, and
//! what it keeps beside.

use super::*;

pub(super) async fn contract(ledger: Arc<dyn Ledger>) {
    let exp = sluice::time::now_unix() + 300;
    let jti = FileId::random().to_string();
    assert_eq!(ledger.spend(&jti, exp).await.unwrap(), Spend::Fresh);
    assert_eq!(ledger.spend(&jti, exp).await.unwrap(), Spend::AlreadySpent);

    // Of many concurrent spends of one token, exactly one wins.
    let jti = FileId::random().to_string();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (ledger, jti) = (ledger.clone(), jti.clone());
            tokio::spawn(async move { ledger.spend(&jti, exp).await.unwrap() })
        })
        .collect();
    let mut fresh = 0;
    for t in tasks {
        if t.await.unwrap() == Spend::Fresh {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 1);

    // An allowance: charges add up to its limit and no further; one larger
    // than the limit is refused outright; another key is another counter.
    let key = FileId::random().to_string();
    assert!(ledger.charge(&key, 3, 10, exp).await.unwrap());
    assert!(ledger.charge(&key, 7, 10, exp).await.unwrap());
    assert!(!ledger.charge(&key, 1, 10, exp).await.unwrap());
    assert!(
        !ledger
            .charge(&format!("{key}-2"), 11, 10, exp)
            .await
            .unwrap()
    );
    assert!(
        ledger
            .charge(&format!("{key}-2"), 10, 10, exp)
            .await
            .unwrap()
    );
    // Of many concurrent charges, exactly as many as fit are taken.
    let key = FileId::random().to_string();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (ledger, key) = (ledger.clone(), key.clone());
            tokio::spawn(async move { ledger.charge(&key, 2, 10, exp).await.unwrap() })
        })
        .collect();
    let mut taken = 0;
    for t in tasks {
        if t.await.unwrap() {
            taken += 1;
        }
    }
    assert_eq!(taken, 5);
}
