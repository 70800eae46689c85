//! The crypto provider of the HTTPS clients (the OpenAI-compatible and
//! Anthropic models, the OpenAI embeddings, MCP over streamable HTTP).
//!
//! They use rustls without a built-in provider, so that no feature pulls
//! aws-lc-rs and its C library build: rustls's `ring` provider is
//! installed as the process default the first time a client is made,
//! unless the program installed one of its own before (then that one is
//! kept, as rustls's process default is set once).

/// Installs rustls's `ring` provider as the process default if none is
/// installed yet: called before each HTTPS client is built, since reqwest
/// panics building one with no provider to use.
pub(crate) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may install one between the check and here: its
        // provider is then the default, and this error says only that.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A client of an OpenAI-compatible API configured by `config`, the
/// crypto provider installed first (the chat model and the embeddings
/// both make theirs here).
#[cfg(feature = "openai")]
pub(crate) fn openai_client(
    config: &async_openai::config::OpenAIConfig,
) -> async_openai::Client<async_openai::config::OpenAIConfig> {
    install_crypto_provider();
    async_openai::Client::with_config(config.clone())
}

#[cfg(test)]
mod tests {
    use super::install_crypto_provider;
    use rustls::crypto::CryptoProvider;

    #[test]
    fn the_first_provider_installed_stays() {
        install_crypto_provider();
        let first = CryptoProvider::get_default().cloned().unwrap();
        install_crypto_provider();
        let second = CryptoProvider::get_default().cloned().unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &second));
    }

    /// reqwest panics building a client with no provider to use.
    #[cfg(any(feature = "anthropic", feature = "mcp"))]
    #[test]
    fn an_https_client_builds() {
        install_crypto_provider();
        assert!(reqwest::Client::builder().build().is_ok());
    }

    #[cfg(feature = "openai")]
    #[test]
    fn an_openai_client_builds_with_the_provider_installed() {
        let config = async_openai::config::OpenAIConfig::new().with_api_key("k");
        let _client = super::openai_client(&config);
        assert!(CryptoProvider::get_default().is_some());
    }
}
