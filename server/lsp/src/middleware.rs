//! A tower layer between the transport and the `LspService` that keeps a
//! panicking handler from ending the server: a request whose handler panics
//! is answered with an internal error, a notification with nothing.

use crate::session::panic_message;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};
use tower::Service;
use tower_lsp_server::jsonrpc::{Error, Request, Response};

pub struct CatchPanics<S> {
    inner: S,
}

impl<S> CatchPanics<S> {
    pub fn new(inner: S) -> Self {
        CatchPanics { inner }
    }
}

impl<S> Service<Request> for CatchPanics<S>
where
    S: Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Option<Response>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let method = req.method().to_string();
        let id = req.id().cloned();
        let fut = self.inner.call(req);
        Box::pin(async move {
            match AssertUnwindSafe(fut).catch_unwind().await {
                Ok(result) => result,
                Err(payload) => {
                    tracing::error!(
                        "handler of `{method}` panicked: {}",
                        panic_message(payload.as_ref())
                    );
                    let error = Error {
                        message: format!("racelens: internal error in `{method}`").into(),
                        ..Error::internal_error()
                    };
                    Ok(id.map(|id| Response::from_error(id, error)))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// A service whose every handler panics.
    struct Panicky;

    impl Service<Request> for Panicky {
        type Response = Option<Response>;
        type Error = Infallible;
        type Future = BoxFuture<'static, Result<Option<Response>, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request) -> Self::Future {
            Box::pin(async { panic!("handler bug") })
        }
    }

    #[tokio::test]
    async fn a_panicking_request_gets_an_internal_error_and_a_notification_nothing() {
        let mut service = CatchPanics::new(Panicky);
        let response = service
            .call(Request::build("textDocument/hover").id(7).finish())
            .await
            .unwrap()
            .expect("a response");
        let (id, result) = response.into_parts();
        assert_eq!(id, tower_lsp_server::jsonrpc::Id::Number(7));
        assert_eq!(
            result.unwrap_err().code,
            tower_lsp_server::jsonrpc::ErrorCode::InternalError
        );
        assert!(service
            .call(Request::build("textDocument/didOpen").finish())
            .await
            .unwrap()
            .is_none());
    }
}
