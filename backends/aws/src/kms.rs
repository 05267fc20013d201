//! Receipts of custody signed by a KMS key (`SLUICE_RECEIPT_KMS_KEY`): an
//! `ECC_NIST_P256` key whose private half never leaves KMS. Each receipt
//! is one `Sign` call (`ECDSA_SHA_256` over the JWS's signing input, sent
//! whole: `RAW`, which KMS takes up to 4096 bytes); the public keys, the
//! current one and those retired (`SLUICE_RECEIPT_KMS_RETIRED`), are read
//! once with `GetPublicKey` and kept. A KMS that does not answer is
//! [`ReceiptError::Unreachable`]: the receipt is pending, nothing is
//! signed by another key, and the next request tries again.

use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{MessageType, SigningAlgorithmSpec};
use sluice::config::AwsConfig;
use sluice::receipts::{Jwk, KeySet, ReceiptError, Signer, es256_of_der, jwk_of_spki};
use tokio::sync::OnceCell;

/// The longest signing input KMS signs as it is (`RAW`).
const RAW_MAX: usize = 4096;

/// Signs receipts with a KMS key.
#[derive(Debug)]
pub struct KmsSigner {
    client: aws_sdk_kms::Client,
    key: String,
    retired: Vec<String>,
    /// The public keys, once read.
    keys: OnceCell<KeySet>,
}

impl KmsSigner {
    /// The signer `aws` names (`SLUICE_RECEIPT_KMS_KEY`), if any; KMS is
    /// reached as the SDK's chain says (`AWS_ENDPOINT_URL_KMS`: an
    /// emulator's).
    pub fn new(shared: &aws_config::SdkConfig, aws: &AwsConfig) -> Option<Self> {
        let key = aws.receipt_kms_key.clone()?;
        let config = aws_sdk_kms::config::Builder::from(shared)
            .timeout_config(crate::timeouts())
            .build();
        Some(Self {
            client: aws_sdk_kms::Client::from_conf(config),
            key,
            retired: aws.receipt_kms_retired.clone(),
            keys: OnceCell::new(),
        })
    }

    /// The public key of `key`, as a JWK named by its thumbprint.
    async fn public(&self, key: &str) -> Result<Jwk, ReceiptError> {
        let out = self
            .client
            .get_public_key()
            .key_id(key)
            .send()
            .await
            .map_err(|e| unreachable(key, e))?;
        let der = out
            .public_key()
            .ok_or_else(|| ReceiptError::Key(format!("KMS gave no public key for {key}")))?;
        jwk_of_spki(der.as_ref())
            .map_err(|e| ReceiptError::Key(format!("the KMS key {key} is not ES256: {e}")))
    }
}

#[async_trait::async_trait]
impl Signer for KmsSigner {
    async fn keys(&self) -> Result<KeySet, ReceiptError> {
        self.keys
            .get_or_try_init(|| async {
                let current = self.public(&self.key).await?;
                let mut retired = Vec::with_capacity(self.retired.len());
                for key in &self.retired {
                    retired.push(self.public(key).await?);
                }
                tracing::info!(
                    kid = current.common.key_id.as_deref().unwrap_or_default(),
                    retired = retired.len(),
                    "receipt keys read from KMS"
                );
                Ok(KeySet { current, retired })
            })
            .await
            .cloned()
    }

    async fn sign_es256(&self, input: &[u8]) -> Result<Vec<u8>, ReceiptError> {
        if input.len() > RAW_MAX {
            return Err(ReceiptError::Key(format!(
                "a receipt of {} bytes is over the {RAW_MAX} KMS signs",
                input.len()
            )));
        }
        let out = self
            .client
            .sign()
            .key_id(&self.key)
            .message(Blob::new(input))
            .message_type(MessageType::Raw)
            .signing_algorithm(SigningAlgorithmSpec::EcdsaSha256)
            .send()
            .await
            .map_err(|e| unreachable(&self.key, e))?;
        let der = out
            .signature()
            .ok_or_else(|| ReceiptError::Key("KMS gave no signature".to_owned()))?;
        es256_of_der(der.as_ref())
    }
}

/// A KMS call that failed: the key's name and the SDK's account of why
/// (never a credential).
fn unreachable<E: std::error::Error + Send + Sync + 'static>(
    key: &str,
    e: aws_sdk_kms::error::SdkError<E>,
) -> ReceiptError {
    ReceiptError::Unreachable(format!(
        "KMS key {key}: {}",
        aws_sdk_kms::error::DisplayErrorContext(e)
    ))
}
