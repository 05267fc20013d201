//! The alarms on sluice's metrics read what the functions write.

use super::*;

/// The alarms on sluice's own metrics name metrics the functions write,
/// with the dimensions they write them with: an alarm on a name or a
/// dimension nobody writes would never fire.
/// An alarm's (or a metric math alarm's metric's) dimensions: each name
/// with its value.
fn dimensions_of(metric: &Yaml) -> Vec<(String, Yaml)> {
    key(metric, "Dimensions")
        .as_vec()
        .unwrap()
        .iter()
        .map(|d| (key(d, "Name").as_str().unwrap().to_owned(), key(d, "Value")))
        .collect()
}

#[test]
fn the_alarms_on_sluices_metrics_read_what_the_functions_write() {
    let t = template();
    let resources = key(&t, "Resources");
    let mut checked = 0;
    for (name, resource) in resources.as_hash().unwrap() {
        let props = key(resource, "Properties");
        if key(resource, "Type").as_str() != Some("AWS::CloudWatch::Alarm")
            || key(&props, "Namespace").as_str() != Some("sluice")
        {
            continue;
        }
        let name = name.as_str().unwrap();
        assert_eq!(
            key(&props, "MetricName").as_str(),
            Some(sluice::telemetry::REFUSALS),
            "{name}"
        );
        let dimensions = dimensions_of(&props);
        assert_eq!(
            dimensions
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>(),
            ["Function", "reason"],
            "{name}: the dimensions of every document the functions write"
        );
        let reason = dimensions[1].1.as_str().unwrap();
        let written = [
            sluice::Error::bug("x").reason(),
            sluice::Error::LedgerUnavailable.reason(),
            sluice::Error::StoreUnavailable.reason(),
        ];
        assert!(written.contains(&reason), "{name}: {reason}");
        checked += 1;
    }
    assert!(checked >= 4, "{checked} alarms on sluice's metrics");
    // Alarms over several functions' metrics (metric math): each metric
    // is one the functions write, with its dimensions and a label value
    // the code gives.
    let mut math = 0;
    for (name, resource) in resources.as_hash().unwrap() {
        let props = key(resource, "Properties");
        let Some(metrics) = key(&props, "Metrics").as_vec().cloned() else {
            continue;
        };
        for m in metrics
            .iter()
            .filter(|m| !key(m, "MetricStat").is_badvalue())
        {
            let metric = key(&key(m, "MetricStat"), "Metric");
            assert_eq!(
                key(&metric, "Namespace").as_str(),
                Some("sluice"),
                "{name:?}"
            );
            assert_eq!(
                key(&metric, "MetricName").as_str(),
                Some(sluice::telemetry::SCANS),
                "{name:?}"
            );
            let dimensions = dimensions_of(&metric);
            assert_eq!(dimensions[0].0, "Function", "{name:?}");
            assert_eq!(dimensions[1].0, "verdict", "{name:?}");
            let infected = sluice::records::Verdict::Infected {
                signature: String::new(),
                by: String::new(),
            };
            assert_eq!(dimensions[1].1.as_str(), Some(infected.label()), "{name:?}");
            math += 1;
        }
    }
    assert_eq!(
        math, 3,
        "the malware alarm reads the mcp, issuer and importer functions"
    );
}
