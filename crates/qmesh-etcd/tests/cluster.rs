//! The client and the election against a real 3-member etcd.

use std::time::Duration;

use qmesh_etcd::testing::Cluster;
use qmesh_etcd::{Election, EtcdError, Standing, pb};

fn put(key: &[u8], value: &[u8]) -> pb::RequestOp {
    pb::RequestOp {
        request: Some(pb::request_op::Request::RequestPut(pb::PutRequest {
            key: key.to_vec(),
            value: value.to_vec(),
            ..Default::default()
        })),
    }
}

#[test]
fn election_fencing_and_quorum_on_a_real_cluster() {
    if Cluster::skipped() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = Cluster::start(dir.path(), 3).unwrap_or_else(|e| panic!("{e}"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client();
        let key = b"/t/leader".to_vec();
        let a = Election::new(client.clone(), key.clone(), 2);
        let b = Election::new(client.clone(), key.clone(), 2);
        let term_a = a.campaign(b"a", |_| {}).await;
        let standing_a = a.keep(term_a);

        // b waits while a leads, and sees that a leads.
        let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
        let b_task = tokio::spawn(async move {
            b.campaign(b"b", move |s| {
                if let Ok(Some(v)) = s {
                    let _ = seen_tx.send(v.to_vec());
                }
            })
            .await
        });
        assert_eq!(seen_rx.recv().await.unwrap(), b"a".to_vec());

        // A write fenced on a's term commits while a leads.
        let fenced = |term: qmesh_etcd::Term, value: &[u8]| pb::TxnRequest {
            compare: vec![term.fence(&key)],
            success: vec![put(b"/t/data", value)],
            failure: vec![],
        };
        assert!(client.txn(fenced(term_a, b"1")).await.unwrap().succeeded);

        // a stops renewing (as if stopped): b wins once the lease runs out,
        // with a later term, and a's fenced writes are refused.
        drop(standing_a);
        client.revoke(term_a.lease).await.unwrap();
        let term_b = tokio::time::timeout(Duration::from_secs(10), b_task)
            .await
            .expect("b takes over")
            .unwrap();
        assert!(term_b.revision > term_a.revision);
        assert!(!client.txn(fenced(term_a, b"2")).await.unwrap().succeeded);
        assert_eq!(
            client.get(b"/t/data").await.unwrap().unwrap().value,
            b"1".to_vec(),
            "the old term wrote nothing"
        );
        let b2 = Election::new(client.clone(), key.clone(), 2);
        let mut standing_b = b2.keep(term_b);

        // One member of three down: writes go on.
        cluster.kill_member(0);
        assert!(client.txn(fenced(term_b, b"3")).await.unwrap().succeeded);

        // Two down: no quorum, said as such; the leader becomes uncertain.
        cluster.kill_member(1);
        let err = client.txn(fenced(term_b, b"4")).await.unwrap_err();
        assert!(matches!(err, EtcdError::NoQuorum { .. }), "{err}");
        assert!(err.to_string().contains("no quorum"), "{err}");
        tokio::time::timeout(Duration::from_secs(10), async {
            while !matches!(*standing_b.borrow_and_update(), Standing::Uncertain { .. }) {
                standing_b.changed().await.unwrap();
            }
        })
        .await
        .expect("the leader says it may no longer lead");

        // One back: writes resume, and the lease held (etcd does not expire
        // leases without a leader), so b leads again.
        cluster.start_member(1).unwrap();
        tokio::time::timeout(Duration::from_secs(30), async {
            while *standing_b.borrow_and_update() != Standing::Leading {
                standing_b.changed().await.unwrap();
            }
        })
        .await
        .expect("the leader leads again once etcd has quorum");
        assert!(client.txn(fenced(term_b, b"5")).await.unwrap().succeeded);
        assert_eq!(
            client.get(b"/t/data").await.unwrap().unwrap().value,
            b"5".to_vec()
        );
    });
}
