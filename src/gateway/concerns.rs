//! Concern-based filtering as a layer (see [`crate::concerns`]): the
//! declarations in `capabilities.concerns` and `concerns/list`, a client's
//! configuration (from `initialize`, `notifications/initialized`,
//! `concerns/update`, a sessionless request's `_meta.concerns`, or its
//! `[[auth.clients]]` entry), and `list_changed` when an update changes what
//! the session is shown. The lists themselves are filtered where they are
//! served: `tools/list` from the session's listing ([`Gateway::listing_for`]),
//! merged resource, template and prompt lists in the forwarder.
//!
//! Present only when `[[concerns]]` declares some: otherwise `concerns/*` are
//! methods like any other (an upstream's, if it has them).

use std::sync::Arc;

use serde_json::{Value, json};

use super::layer::{Exchange, Layer, Next};
use super::lists::RouteMaps;
use super::state::GwSession;
use super::views::Views;
use crate::auth::Principal;
use crate::concerns::{Configured, Declared};
use crate::jsonrpc::{ErrorObject, Message, Notification, Outcome, Request};
use crate::protocol::method;
use crate::server::ServerOffer;

/// `concerns/list`: the declarations.
pub const LIST: &str = "concerns/list";
/// `concerns/update`: a new configuration for the session.
pub const UPDATE: &str = "concerns/update";

/// The concerns layer.
pub struct Concerns {
    declared: Arc<Declared>,
    /// What an update changes: the session's listing, and the lists of
    /// upstreams that map theirs to concerns.
    lists: Lists,
}

/// What a change of a session's concerns is judged against: its catalog
/// views, and what the merged lists taught about concerns (shared with the
/// forwarder).
pub struct Lists {
    pub views: Views,
    pub routes: Arc<RouteMaps>,
}

impl Concerns {
    /// The layer of `declared` concerns (`None` when there are none).
    pub fn new(declared: &Arc<Declared>, lists: Lists) -> Option<Self> {
        (!declared.is_empty()).then(|| Self { declared: declared.clone(), lists })
    }
}

impl Layer for Concerns {
    async fn serve<'a, N: Next<'a>>(&'a self, cx: Exchange<'a>, request: Request, next: N) -> Outcome {
        match request.method.as_str() {
            LIST => Outcome::Result(json!({"concerns": self.declared.to_json()})),
            UPDATE => self.update(cx, request.params.as_ref()),
            _ => {
                // A sessionless request carries its client's configuration.
                if cx.session.is_sessionless()
                    && let Some(sent) = crate::concerns::sent_in(request.params.as_ref().and_then(|p| p.get("_meta")))
                {
                    match self.declared.configure(sent) {
                        Ok(c) => drop(cx.session.state.set_concerns(Some(Arc::new(c)))),
                        Err(e) => return Outcome::error(e.to_error_object()),
                    }
                }
                next.run(cx, request).await
            }
        }
    }

    fn offer(&self, offer: &mut ServerOffer) {
        if let Some(caps) = offer.capabilities.as_object_mut() {
            caps.insert("concerns".into(), self.declared.to_json());
        }
    }
}

impl Concerns {
    /// `concerns/update`: the session's new configuration, then
    /// `list_changed` for what it changed.
    fn update(&self, cx: Exchange<'_>, params: Option<&Value>) -> Outcome {
        if cx.session.is_sessionless() {
            return Outcome::error(ErrorObject::invalid_params(
                "concerns/update needs a session; a sessionless request carries its concerns in params._meta.concerns",
            ));
        }
        let Some(sent) = crate::concerns::sent_in(params) else {
            return Outcome::error(ErrorObject::invalid_params("concerns/update needs params.concerns (an object)"));
        };
        match self.declared.configure(sent) {
            Ok(configuration) => {
                self.lists.reconfigure(cx.session, Some(Arc::new(configuration)));
                Outcome::Result(json!({}))
            }
            Err(e) => Outcome::error(e.to_error_object()),
        }
    }

    /// A configuration sent in `notifications/initialized`, where no error
    /// can answer it: applied if valid, else logged.
    pub(super) fn notified(&self, session: &GwSession, params: Option<&Value>) {
        let Some(sent) = crate::concerns::sent_in(params) else { return };
        match self.declared.configure(sent) {
            Ok(c) => self.lists.reconfigure(session, Some(Arc::new(c))),
            Err(e) => {
                tracing::warn!(
                    session = session.id(),
                    reason = e.summary(),
                    "concerns in notifications/initialized ignored"
                )
            }
        }
    }
}

impl Lists {
    /// Puts `configuration` in effect for `session`, and tells it which of
    /// its lists changed: tools where its listing did, prompts and resources
    /// where an upstream it uses maps those to concerns. A change of its
    /// values goes to the audit trail.
    pub(crate) fn reconfigure(&self, session: &GwSession, configuration: Option<Configured>) {
        let before = self.views.listing_for(session);
        let old = session.state.set_concerns(configuration);
        let new = session.state.concerns();
        if let Some(audit) = self.views.audit()
            && old.as_ref().map(|c| c.values()) != new.as_ref().map(|c| c.values())
        {
            super::audited::concerns(audit, session, new.as_deref());
        }
        if old.as_ref().map(|c| c.filter()) == new.as_ref().map(|c| c.filter()) {
            return;
        }
        let after = self.views.listing_for(session);
        let mut changed = Vec::new();
        if before.catalog.list_result_raw().get() != after.catalog.list_result_raw().get() {
            changed.push(method::TOOLS_LIST_CHANGED);
        }
        let upstreams = self.views.upstreams();
        let mapped = |cap: &str| {
            upstreams
                .iter()
                .any(|u| !u.is_retired() && session.state.uses(u.index) && u.has(cap) && self.routes.maps_concerns(u))
        };
        if mapped("resources") {
            changed.push(method::RESOURCES_LIST_CHANGED);
        }
        if mapped("prompts") {
            changed.push(method::PROMPTS_LIST_CHANGED);
        }
        for method in changed {
            session.notify(Message::Notification(Notification::new(method, None)));
        }
    }
}

/// The configuration stored for `principal`'s client, if any (a
/// sessionless request's own `_meta.concerns`, read by the layer, replaces
/// it).
pub(crate) fn stored(declared: &Declared, principal: &Principal) -> Option<Configured> {
    let values = &principal.policy().concerns;
    (!values.is_empty()).then(|| Arc::new(declared.configuration(values.clone())))
}
