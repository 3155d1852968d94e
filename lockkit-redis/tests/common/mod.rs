//! Shared by the conformance test files: one line declares a backend.

/// Declares a [`lockkit_conformance::UrlBackend`] named `$name` over a testkit
/// server of type `$server`: `$start` is a future of `Result<$server, _>` that starts
/// it, `|$s| $url` the URL the drivers (and the killed-holder child process) connect
/// with, and `$connect` an `async fn(&str) -> Result<Arc<dyn LockDriver>, LockError>`.
macro_rules! backend {
    ($(#[$doc:meta])* $name:ident: $server:ty = $start:expr, |$s:ident| $url:expr, $connect:path) => {
        $(#[$doc])*
        struct $name;

        #[lockkit_core::async_trait]
        impl lockkit_conformance::UrlBackend for $name {
            type Server = $server;
            async fn start() -> ($server, String) {
                let $s = $start.await.unwrap();
                let url = $url;
                ($s, url)
            }
            async fn connect(
                url: &str,
            ) -> Result<std::sync::Arc<dyn lockkit_core::LockDriver>, lockkit_core::LockError> {
                $connect(url).await
            }
        }
    };
}

pub(crate) use backend;
