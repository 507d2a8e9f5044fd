//! Tower services between the transport and the `LspService`, for what the
//! `LanguageServer` trait cannot express: [`CatchPanics`] keeps a panicking
//! handler from ending the server (a request gets an internal error, a
//! notification nothing); [`TrackExit`] notes `shutdown` and `exit`, so that
//! the process can exit with 1 after an `exit` that no `shutdown` preceded,
//! as the specification asks; [`AnswerDollarRequests`] answers a request
//! whose method starts with `$/` with `MethodNotFound`, which the
//! `LspService` drops (the specification lets a server ignore only
//! `$/` notifications).

use crate::session::panic_message;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::Service;
use tower_lsp_server::jsonrpc::{Error, Request, Response};

/// Answers the `$/` requests the inner service leaves unanswered.
pub struct AnswerDollarRequests<S> {
    inner: S,
}

impl<S> AnswerDollarRequests<S> {
    pub fn new(inner: S) -> Self {
        AnswerDollarRequests { inner }
    }
}

impl<S> Service<Request> for AnswerDollarRequests<S>
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
        let id = req.id().filter(|_| req.method().starts_with("$/")).cloned();
        let method = req.method().to_string();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await?;
            Ok(match (response, id) {
                (None, Some(id)) => {
                    let error = Error {
                        message: format!("method not found: `{method}`").into(),
                        ..Error::method_not_found()
                    };
                    Some(Response::from_error(id, error))
                }
                (response, _) => response,
            })
        })
    }
}

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

/// Whether the client asked to shut down and to exit.
#[derive(Clone, Default)]
pub struct Lifecycle {
    shutdown: Arc<AtomicBool>,
    exit: Arc<AtomicBool>,
}

impl Lifecycle {
    /// The process's exit code: 1 after an `exit` without a successful
    /// `shutdown` before it, 0 otherwise (also when the input just ends).
    pub fn exit_code(&self) -> i32 {
        i32::from(self.exit.load(Ordering::SeqCst) && !self.shutdown.load(Ordering::SeqCst))
    }
}

pub struct TrackExit<S> {
    inner: S,
    lifecycle: Lifecycle,
}

impl<S> TrackExit<S> {
    pub fn new(inner: S, lifecycle: Lifecycle) -> Self {
        TrackExit { inner, lifecycle }
    }
}

impl<S> Service<Request> for TrackExit<S>
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
        let is_shutdown = req.method() == "shutdown";
        if req.method() == "exit" {
            self.lifecycle.exit.store(true, Ordering::SeqCst);
        }
        let shutdown = self.lifecycle.shutdown.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let result = fut.await;
            if is_shutdown && matches!(&result, Ok(Some(r)) if r.is_ok()) {
                shutdown.store(true, Ordering::SeqCst);
            }
            result
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

    /// A service that answers every request with `null`.
    struct Answers;

    impl Service<Request> for Answers {
        type Response = Option<Response>;
        type Error = Infallible;
        type Future = BoxFuture<'static, Result<Option<Response>, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, req: Request) -> Self::Future {
            let response = req
                .id()
                .cloned()
                .map(|id| Response::from_ok(id, serde_json::Value::Null));
            Box::pin(async move { Ok(response) })
        }
    }

    /// A service that answers nothing, like the `LspService` on `$/` methods.
    struct Silent;

    impl Service<Request> for Silent {
        type Response = Option<Response>;
        type Error = Infallible;
        type Future = BoxFuture<'static, Result<Option<Response>, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request) -> Self::Future {
            Box::pin(async { Ok(None) })
        }
    }

    #[tokio::test]
    async fn a_dollar_request_gets_method_not_found_and_a_dollar_notification_nothing() {
        let mut service = AnswerDollarRequests::new(Silent);
        let response = service
            .call(Request::build("$/unknown").id(3).finish())
            .await
            .unwrap()
            .expect("a response");
        let (id, result) = response.into_parts();
        assert_eq!(id, tower_lsp_server::jsonrpc::Id::Number(3));
        assert_eq!(
            result.unwrap_err().code,
            tower_lsp_server::jsonrpc::ErrorCode::MethodNotFound
        );
        assert!(service
            .call(Request::build("$/setTrace").finish())
            .await
            .unwrap()
            .is_none());
        let mut answered = AnswerDollarRequests::new(Answers);
        let (_, result) = answered
            .call(Request::build("$/handled").id(4).finish())
            .await
            .unwrap()
            .expect("a response")
            .into_parts();
        assert!(result.is_ok());
    }

    #[tokio::test]
    async fn exit_code_is_1_only_after_an_exit_without_shutdown() {
        let lifecycle = Lifecycle::default();
        let mut service = TrackExit::new(Answers, lifecycle.clone());
        assert_eq!(lifecycle.exit_code(), 0);
        service.call(Request::build("exit").finish()).await.unwrap();
        assert_eq!(lifecycle.exit_code(), 1);
        service
            .call(Request::build("shutdown").id(1).finish())
            .await
            .unwrap();
        assert_eq!(lifecycle.exit_code(), 0);
    }
}
