//! The mutations' and the outcome checks' unit tests.

use serde_json::{Value, json};

use super::device::{manifest_symbols, names_krate_a_dependency};
use super::mutate::{MUTATIONS, Mutation, apply, mutant, rng_for};

fn seed() -> Value {
    json!({
        "magic": offload_manifest_format::MAGIC,
        "format_version": offload_manifest_format::FORMAT_VERSION,
        "crate": "seed",
        "kernels": [
            {"kernel": "seed::generic::<u32>",
             "item": {"crate": "seed", "path": [["ValueNs", "generic", 0]]},
             "args": [["num", "u32"]], "symbol": "s", "params": [{"size": 8, "align": 8}]},
            {"kernel": "seed::plain",
             "item": {"crate": "seed", "path": [["TypeNs", "m", 0], ["ValueNs", "plain", 0]]},
             "args": [["adt", {"crate": "seed", "path": [["TypeNs", "P", 0]]}, []]],
             "symbol": "t", "params": []}
        ]
    })
}

#[test]
fn mutants_are_reproducible_and_differ() {
    let seed_text = serde_json::to_string_pretty(&seed()).unwrap() + "\n";
    for i in 0..300 {
        let (a, ma) = mutant(&seed(), 7, i);
        let (b, mb) = mutant(&seed(), 7, i);
        assert_eq!((a.clone(), ma), (b, mb), "mutant {i} is not reproducible");
        assert_ne!(a, seed_text, "mutant {i} equals the seed");
    }
    assert_ne!(mutant(&seed(), 7, 0).0, mutant(&seed(), 8, 0).0);
}

#[test]
fn every_mutation_applies_to_the_seed() {
    for mutation in MUTATIONS {
        if mutation == Mutation::Truncate {
            continue;
        }
        let applied = (0..50).any(|i| {
            let mut v = seed();
            apply(mutation, &mut v, &mut rng_for(3, i)) && v != seed()
        });
        assert!(applied, "{mutation:?} never changed the seed");
    }
}

#[test]
fn change_kind_keeps_the_tree_and_changes_the_tag() {
    let mut v = json!({"args": [["num", "u32"]]});
    assert!(apply(Mutation::ChangeKind, &mut v, &mut rng_for(1, 1)));
    let tag = v["args"][0][0].as_str().unwrap();
    assert_ne!(tag, "num");
    assert_eq!(v["args"][0][1], "u32");
}

#[test]
fn truncation_leaves_an_incomplete_document() {
    let truncated = (0..2000)
        .map(|i| mutant(&seed(), 11, i))
        .find(|(_, m)| m.last() == Some(&Mutation::Truncate))
        .expect("no truncation in 2000 mutants");
    assert!(serde_json::from_str::<Value>(&truncated.0).is_err());
}

#[test]
fn every_mutation_kind_is_drawn() {
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..2000 {
        seen.extend(mutant(&seed(), 5, i).1);
    }
    assert_eq!(seen.len(), MUTATIONS.len(), "drawn: {seen:?}");
}

#[test]
fn a_manifest_of_another_root_makes_the_crate_a_dependency() {
    let root =
        |krate: &str, graph: &[&str]| json!({"crate": krate, "crate_graph": graph}).to_string();
    assert!(names_krate_a_dependency(&root("app", &["app", "seed"]), "seed"));
    assert!(!names_krate_a_dependency(&root("seed", &["seed"]), "seed"));
    assert!(!names_krate_a_dependency(&root("app", &["app", "core"]), "seed"));
    assert!(!names_krate_a_dependency("{\"crate\": \"app\", \"crate_graph\": [\"se", "seed"));
}

#[test]
fn an_accepted_image_must_hold_the_mutants_symbols() {
    let text = serde_json::to_string(&seed()).unwrap();
    let symbols: Vec<String> = manifest_symbols(&text).into_iter().collect();
    assert_eq!(symbols, ["s", "t"]);
    assert!(manifest_symbols("{\"kernels\": [{\"symbol\": \"s\"").is_empty());
}

#[test]
fn nest_wraps_a_type_tree() {
    let mut v = json!({"args": [["num", "u32"]]});
    assert!(apply(Mutation::Nest, &mut v, &mut rng_for(2, 2)));
    let tag = v["args"][0][0].as_str().unwrap();
    assert!(["ref", "ptr", "slice", "tuple"].contains(&tag), "{tag}");
    assert!(v.to_string().contains("[\"num\",\"u32\"]"));
}
