//! Links going down and coming back (`link_down` events): both directions
//! stop (or run again at their nominal rate) and routing is rebuilt around
//! the links that are down, as the routing function would have built it on
//! the fabric without them, with the explicit `[[routes]]` laid over it
//! again. Frames already routed keep their next hop (a bridge routes a
//! frame as its upstream sends it): those queued for a down link wait
//! there, as behind a link whose rate is 0.

use super::ctx::Ctx;
use super::fabric::{Fabric, Nic};
use super::node::NodeKind;
use super::port::PortId;
use super::routing::{Reroute, Router};
use crate::config::RoutingConfig;
use crate::scheme::Scheme;
use crate::trace::Tracer;

impl<S: Scheme> Fabric<S> {
    /// The link of port `port` goes down (`up` false) or comes back up.
    #[cold]
    #[inline(never)]
    pub(crate) fn set_link<T: Tracer<S>, N: Nic<S>>(&mut self, port: PortId, up: bool, ctx: &mut Ctx<S, T>, nic: &mut N) {
        let reverse = self.ports[port as usize].reverse;
        for p in [port, reverse] {
            self.ports[p as usize].down = !up;
            let rate = if up { self.ports[p as usize].nominal_rate_bps } else { 0 };
            // Back up at its configured rate, a port a scale_buffers event
            // degraded has its queue and thresholds as built again.
            let rescale = up && self.ports[p as usize].queue_cap != u64::MAX;
            self.set_rate(p, rate, rescale, ctx, nic);
        }
        let Some(r) = self.reroute.as_deref() else {
            unreachable!("a run with link_down events keeps its routing's inputs")
        };
        let bridge_node: Vec<u32> = self.bridges.iter().map(|b| b.node).collect();
        // The fabric was routed with these inputs when it was built: only
        // its size can fail a build, and it has not grown.
        let mut router =
            Router::build(&r.routing, r.seed, &self.nodes, &self.ports, self.n_stations, &bridge_node).expect("routed when built");
        for &(b, d, p) in &r.overrides {
            router.set_override(b, d, p);
        }
        router.densify();
        self.router = router;
    }

    /// The inputs of [`Fabric::set_link`]'s routing (explicit routes
    /// resolved against the built network).
    pub(crate) fn keep_routing(&mut self, routing: &RoutingConfig, seed: u64, routes: &[crate::config::RouteConfig]) {
        let overrides = routes
            .iter()
            .filter_map(|r| {
                let b = match self.nodes[*self.node_by_name.get(&r.bridge)? as usize].kind {
                    NodeKind::Bridge(b) => b,
                    NodeKind::Station(_) => return None,
                };
                let d = match self.nodes[*self.node_by_name.get(&r.dst)? as usize].kind {
                    NodeKind::Station(s) => s,
                    NodeKind::Bridge(_) => return None,
                };
                Some((b, d, self.port_by_name(&r.bridge, &r.via)?))
            })
            .collect();
        self.reroute = Some(Box::new(Reroute {
            routing: *routing,
            seed,
            overrides,
        }));
    }
}
