//! The table of spent tokens and file records, as `template.yaml` declares
//! it: the one definition that the deployment, the tests' emulators and the
//! development emulators (`infra/dev-emulators.sh`, through the
//! `sluice-provision` command) all create, so no copy can drift from it.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use yaml_rust2::{Yaml, YamlLoader};

/// The template's table: its attributes, key and indexes.
#[derive(Debug, Clone)]
pub struct TableDefinition {
    /// The attributes keys are made of.
    pub attributes: Vec<AttributeDefinition>,
    /// The table's key.
    pub key: Vec<KeySchemaElement>,
    /// Its global secondary indexes.
    pub indexes: Vec<GlobalSecondaryIndex>,
}

fn text<'a>(y: &'a Yaml, field: &str) -> &'a str {
    y[field]
        .as_str()
        .unwrap_or_else(|| panic!("template.yaml: the table's {field} is not text"))
}

fn key_schema(list: &Yaml) -> Vec<KeySchemaElement> {
    list.as_vec()
        .expect("template.yaml: a KeySchema is a list")
        .iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(text(k, "AttributeName"))
                .key_type(KeyType::from(text(k, "KeyType")))
                .build()
                .expect("a key has a name and a type")
        })
        .collect()
}

/// Reads the `AWS::DynamoDB::Table` of `template.yaml`.
pub fn from_template() -> TableDefinition {
    let path = crate::root().join("template.yaml");
    let source = std::fs::read_to_string(&path).expect("template.yaml is readable");
    let docs = YamlLoader::load_from_str(&source).expect("template.yaml is YAML");
    let resources = docs[0]["Resources"]
        .as_hash()
        .expect("template.yaml has Resources");
    let tables: Vec<&Yaml> = resources
        .values()
        .filter(|r| r["Type"].as_str() == Some("AWS::DynamoDB::Table"))
        .collect();
    assert_eq!(tables.len(), 1, "template.yaml declares one table");
    let props = &tables[0]["Properties"];
    let attributes = props["AttributeDefinitions"]
        .as_vec()
        .expect("AttributeDefinitions is a list")
        .iter()
        .map(|a| {
            AttributeDefinition::builder()
                .attribute_name(text(a, "AttributeName"))
                .attribute_type(ScalarAttributeType::from(text(a, "AttributeType")))
                .build()
                .expect("an attribute has a name and a type")
        })
        .collect();
    let indexes = props["GlobalSecondaryIndexes"]
        .as_vec()
        .map(|list| {
            list.iter()
                .map(|i| {
                    GlobalSecondaryIndex::builder()
                        .index_name(text(i, "IndexName"))
                        .set_key_schema(Some(key_schema(&i["KeySchema"])))
                        .projection(
                            Projection::builder()
                                .projection_type(ProjectionType::from(text(
                                    &i["Projection"],
                                    "ProjectionType",
                                )))
                                .build(),
                        )
                        .build()
                        .expect("an index has a name and a key")
                })
                .collect()
        })
        .unwrap_or_default();
    TableDefinition {
        attributes,
        key: key_schema(&props["KeySchema"]),
        indexes,
    }
}

/// Creates table `name` as the template declares it (on demand, as
/// deployed; the template's TTL is left out: dynalite has no
/// UpdateTimeToLive).
pub async fn create(client: &aws_sdk_dynamodb::Client, name: &str) -> Result<(), String> {
    let def = from_template();
    client
        .create_table()
        .table_name(name)
        .set_attribute_definitions(Some(def.attributes))
        .set_key_schema(Some(def.key))
        .set_global_secondary_indexes((!def.indexes.is_empty()).then_some(def.indexes))
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .map(drop)
        .map_err(|e| aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_template_table_has_the_record_indexes_the_code_queries() {
        let def = super::from_template();
        let names: Vec<&str> = def.indexes.iter().map(|i| i.index_name()).collect();
        assert_eq!(
            names,
            [
                sluice_aws::BY_OWNER,
                sluice_aws::PENDING,
                sluice_aws::BY_DIGEST
            ]
        );
        assert_eq!(def.key[0].attribute_name(), "pk");
    }
}
