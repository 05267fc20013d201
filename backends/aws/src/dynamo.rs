//! The spent-token ledger in DynamoDB: one conditional `PutItem` per spend,
//! `attribute_not_exists(pk)`, with a TTL attribute equal to the token's own
//! expiry. A failed condition means another request (on any replica) spent
//! it first.

use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::AttributeValue;
use sluice::ledger::{Ledger, LedgerError, Spend};

use sluice::config::DynamoConfig;

/// The partition key attribute.
pub const KEY: &str = "pk";
/// The TTL attribute (epoch seconds), enabled on the table.
pub const TTL: &str = "expires_at";

/// Spent tokens in one DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoLedger {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl DynamoLedger {
    /// The table `dynamodb` names.
    pub fn new(shared: &aws_config::SdkConfig, dynamodb: &DynamoConfig) -> Self {
        let mut config =
            aws_sdk_dynamodb::config::Builder::from(shared).timeout_config(crate::timeouts());
        if let Some(endpoint) = &dynamodb.endpoint {
            config = config.endpoint_url(crate::endpoint(endpoint));
        }
        Self {
            client: aws_sdk_dynamodb::Client::from_conf(config.build()),
            table: dynamodb.table.clone(),
        }
    }

    /// The SDK client, for tests and setup.
    pub fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.client
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }
}

/// DynamoDB out of reach, timing out or throttling is "not now" (503);
/// anything else is a failure.
pub(crate) fn ledger_error<E, R>(e: aws_sdk_dynamodb::error::SdkError<E, R>) -> LedgerError
where
    E: std::error::Error + aws_sdk_dynamodb::error::ProvideErrorMetadata + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    use aws_sdk_dynamodb::error::SdkError;
    let transient = match &e {
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) => true,
        SdkError::ServiceError(s) => matches!(
            s.err().code(),
            Some(
                "ProvisionedThroughputExceededException"
                    | "RequestLimitExceeded"
                    | "ThrottlingException"
                    | "InternalServerError"
            )
        ),
        _ => false,
    };
    let text = DisplayErrorContext(e).to_string();
    if transient {
        LedgerError::Unavailable(text)
    } else {
        LedgerError::Backend(text.into())
    }
}

/// Whether a conditional write's condition held: `false` when DynamoDB
/// refused it for that (another request wrote first), the error otherwise.
pub(crate) fn condition_held<O, E, R>(
    result: Result<O, aws_sdk_dynamodb::error::SdkError<E, R>>,
) -> Result<bool, LedgerError>
where
    E: std::error::Error + aws_sdk_dynamodb::error::ProvideErrorMetadata + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error().and_then(|s| s.code())
                == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(e) => Err(ledger_error(e)),
    }
}

impl DynamoLedger {
    /// The item key of spent token `jti`: `jti#…`, the prefix the
    /// resolver's IAM grant is limited to (template.yaml).
    pub fn key_of(jti: &str) -> String {
        format!("jti#{jti}")
    }

    /// The item key of an event no record's change carries (`ev#…`,
    /// [`Ledger::keep_event`]), the prefix the issuer is granted.
    pub fn event_key(id: &str) -> String {
        format!("ev#{id}")
    }

    /// The item key of allowance `key`: `allow#…`, the prefix the
    /// functions that charge one are granted (template.yaml).
    pub fn allowance_key(key: &str) -> String {
        format!("allow#{key}")
    }
}

impl DynamoLedger {
    /// Spends `jti` in one conditional put, the item carrying `event` (see
    /// [`Ledger::spend_reporting`]) when there is one.
    async fn put_spent(
        &self,
        jti: &str,
        expires_at: i64,
        event: Option<&str>,
    ) -> Result<Spend, LedgerError> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(KEY, AttributeValue::S(Self::key_of(jti)))
            .item(TTL, AttributeValue::N(expires_at.to_string()));
        if let Some(event) = event {
            put = put.item(EVENT, AttributeValue::S(event.to_owned()));
        }
        let result = put
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", KEY)
            .send()
            .await;
        Ok(if condition_held(result)? {
            Spend::Fresh
        } else {
            Spend::AlreadySpent
        })
    }
}

/// The attribute of an item that holds the event it reports, for the
/// table's stream: a spent token's (`file.downloaded`, the spend's event)
/// or an event's own item (`file.rejected`, [`Ledger::keep_event`]).
pub const EVENT: &str = "ev";

#[async_trait::async_trait]
impl Ledger for DynamoLedger {
    async fn spend(&self, jti: &str, expires_at: i64) -> Result<Spend, LedgerError> {
        self.put_spent(jti, expires_at, None).await
    }

    async fn spend_reporting(
        &self,
        jti: &str,
        expires_at: i64,
        event: &str,
    ) -> Result<Spend, LedgerError> {
        self.put_spent(jti, expires_at, Some(event)).await
    }

    async fn charge(
        &self,
        key: &str,
        amount: u64,
        limit: u64,
        expires_at: i64,
    ) -> Result<bool, LedgerError> {
        let Some(room) = limit.checked_sub(amount) else {
            return Ok(false);
        };
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY, AttributeValue::S(Self::allowance_key(key)))
            .update_expression("ADD #n :a SET #t = if_not_exists(#t, :e)")
            .condition_expression("attribute_not_exists(#n) OR #n <= :room")
            .expression_attribute_names("#n", "used")
            .expression_attribute_names("#t", TTL)
            .expression_attribute_values(":a", AttributeValue::N(amount.to_string()))
            .expression_attribute_values(":room", AttributeValue::N(room.to_string()))
            .expression_attribute_values(":e", AttributeValue::N(expires_at.to_string()))
            .send()
            .await;
        condition_held(result)
    }

    async fn keep_event(&self, id: &str, body: &str, expires_at: i64) -> Result<(), LedgerError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(KEY, AttributeValue::S(Self::event_key(id)))
            .item(TTL, AttributeValue::N(expires_at.to_string()))
            .item(EVENT, AttributeValue::S(body.to_owned()))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", KEY)
            .send()
            .await;
        // Kept before, under the same id: once is what the stream needs.
        condition_held(result).map(|_| ())
    }

    async fn is_spent(&self, jti: &str) -> Result<bool, LedgerError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(KEY, AttributeValue::S(Self::key_of(jti)))
            .consistent_read(true)
            .send()
            .await
            .map_err(ledger_error)?;
        Ok(out.item().is_some())
    }
}
