//! Dispatch: each [`HubCommand`] to the feature that handles it, and each request to its
//! handler, one line per message type (`State::request`), once its sender is one the
//! request declares (`check_sender`). A request that fails is answered here with its
//! error; handlers only return it.

use rusqlite::Connection;

use super::{ConnId, Cx, Frame, HubCommand, HubError, HubResult, Out, State};
use crate::git::RepoContext;
use crate::protocol::{ClientMsg, ErrorCode, ServerMsg};

impl State {
    pub(super) fn handle(&mut self, cmd: HubCommand, db: &Connection, out: &mut Out) {
        match cmd {
            HubCommand::Connect {
                conn,
                handle,
                close,
            } => self.connect(conn, handle, close),
            HubCommand::Disconnect { conn } => self.disconnect(conn, db, out),
            HubCommand::Drained { conn } => {
                let session = self.presence.conn(&conn).and_then(|c| c.session.clone());
                if let Some(session) = session
                    && let Err(err) = self.replay(&session, db, out)
                {
                    tracing::error!(session = %session, "replaying the mailbox failed: {}", err.message);
                }
            }
            HubCommand::Request { conn, msg, repo } => {
                let id = msg.request_id();
                if let Some(id) = id {
                    out.requests.push((conn, id));
                }
                if let Err(err) = self.request(conn, *msg, repo, db, out) {
                    if id.is_none() {
                        tracing::warn!(conn, code = %err.code, "{}", err.message);
                    }
                    out.error(conn, id, err);
                }
            }
            HubCommand::ViewBuilt(done) => self.view_built(*done, db, out),
            HubCommand::Respond { conn, msg } => out.send(conn, &msg),
            HubCommand::Frame { conn, bytes } => out.frames.push(Frame {
                conn,
                bytes,
                delivery: None,
            }),
            HubCommand::HostEvent(msg) => self.host_event(&msg, db, out),
            HubCommand::LinkNews(news) => self.link_news(*news, db, out),
            HubCommand::Tick => self.tick(db),
            HubCommand::Forget => {
                self.forget_unseen(db);
                self.expire_away_leases_logged(db, out);
            }
            HubCommand::ProcLaunched(done) => self.proc_launched(*done, db, out),
            HubCommand::ProcExited { key, code, nonce } => {
                if let Err(err) = self.proc_exited(key, code, &nonce, db, out) {
                    tracing::error!(?key, "handling a process's exit failed: {}", err.message);
                }
            }
            HubCommand::GitDone(done) | HubCommand::Continue(done) => self.git_done(*done, db, out),
            HubCommand::Stopped(done) => self.stopped(*done, db, out),
            HubCommand::RecoverWorkers => {
                self.recover_integrations(out);
                if let Err(err) = self.recover_workers(db, out) {
                    tracing::error!("recovering workers failed: {}", err.message);
                }
                if let Err(err) = self.recover_leads(db, out) {
                    tracing::error!("recovering assignments' Leads failed: {}", err.message);
                }
                if let Err(err) = self.recover_started(db, out) {
                    tracing::error!(
                        "recovering the sessions the human started failed: {}",
                        err.message
                    );
                }
                if let Err(err) = self.recover_approval_timers(db) {
                    tracing::error!("recovering approvals' timeouts failed: {}", err.message);
                }
            }
            HubCommand::AskCardDue { ask } => self.ask_card_due(ask, db, out),
            HubCommand::ApprovalDue { approval } => {
                if let Err(err) = self.approval_due(approval, db, out) {
                    tracing::error!(%approval, "timing out an approval failed: {}", err.message);
                }
            }
            HubCommand::Stopping => self.stopping = true,
            HubCommand::Shutdown => {}
        }
    }

    /// Hand one request to its handler: one line per message type.
    fn request(
        &mut self,
        conn: ConnId,
        mut msg: ClientMsg,
        repo: Option<RepoContext>,
        db: &Connection,
        out: &mut Out,
    ) -> HubResult<()> {
        let kind = self.presence.conn(&conn).map(|c| c.handle.kind);
        let Some(kind) = kind else {
            return Ok(()); // Raced with its own disconnect: nobody to answer.
        };
        let cx = Cx {
            conn,
            kind,
            id: msg.request_id().unwrap_or_default(),
        };
        let checked = self.check_sender(cx, msg.senders(), db)?;
        // For a linked host: taken out, the rest is the request as that host's core takes it.
        if let Some(host) = super::hosts::host_field(&mut msg).and_then(Option::take) {
            return self.forward(cx, &host, msg, db, out);
        }
        match msg {
            ClientMsg::Hello(_) => Err(HubError::new(
                ErrorCode::AlreadyGreeted,
                "this connection already said hello",
            )),
            ClientMsg::Register(req) => self.register(cx, req, repo.unwrap_or_default(), db, out),
            ClientMsg::Update(req) => self.update(cx, req, repo, db, out),
            ClientMsg::Ask(req) => self.ask(cx, req, db, out),
            ClientMsg::Report(req) => self.report(cx, req, db, out),
            ClientMsg::Answer(req) => self.answer(cx, req, db, out),
            ClientMsg::Send(req) => self.send_text(cx, req, db, out),
            ClientMsg::Ack(req) => self.ack(cx, req, db, out),
            ClientMsg::LinkHerd(req) => self.link_herd(cx, req, db, out),
            ClientMsg::DeliverHostMail(req) => self.deliver_host_mail(cx, req, db, out),
            ClientMsg::HostMailAck(req) => self.host_mail_ack(req, db),
            ClientMsg::ListSessions(req) => self.list_sessions(cx, req, db, out),
            ClientMsg::ListAsks(req) => self.list_asks(cx, req, db, out),
            ClientMsg::Status(_) => self.status(cx, db, out),
            ClientMsg::Subscribe(req) => self.subscribe(cx, req, out),
            ClientMsg::Ping(_) => Self::ping(cx, out),
            ClientMsg::Supervise(req) => self.supervise(cx, req, db, out),
            ClientMsg::Unpair(req) => self.unpair(cx, req, db, out),
            ClientMsg::SetGoal(req) => self.set_goal(cx, req, db, out),
            ClientMsg::Look(req) => self.look(cx, req, db, out),
            ClientMsg::WorkerView(_) => self.worker_view(cx, db),
            ClientMsg::Verdict(req) => self.verdict(cx, req, db, out),
            ClientMsg::ListPairings(req) => self.list_pairings(cx, req, db, out),
            ClientMsg::Unanswer(req) => self.unanswer(cx, req, db, out),
            ClientMsg::Interrupt(req) => self.interrupt(cx, req, db, out),
            ClientMsg::Bye(req) => self.bye(cx, req),
            ClientMsg::RunResult(req) => self.run_result(cx, req, repo, db, out),
            ClientMsg::ListReports(req) => self.list_reports(cx, req, db, out),
            ClientMsg::SetRole(req) => self.set_role(cx, req, db, out),
            ClientMsg::ListRoles(req) => self.list_roles(cx, req, db, out),
            ClientMsg::ReleaseRole(req) => self.release_role(cx, req, db, out),
            ClientMsg::MessageSupervisor(req) => {
                self.message_supervisor(cx, req, checked.me()?, db, out)
            }
            ClientMsg::AskSupervisor(req) => self.ask_supervisor(cx, req, db, out),
            ClientMsg::ListStaff(req) => self.list_staff(cx, req, checked.pi(), db, out),
            ClientMsg::InspectStaff(req) => match checked.pi() {
                Some(me) => self.inspect_staff(cx, req, me, db, out),
                // A home core, for its Chief: with the human's authority here.
                None => self.inspect_for_home(cx, req, db),
            },
            ClientMsg::MessageStaff(req) => self.message_staff(cx, req, checked.me()?, db, out),
            ClientMsg::ListPeers(req) => self.list_peers(cx, req, checked.me()?, db, out),
            ClientMsg::MessagePeer(req) => self.message_peer(cx, req, checked.me()?, db, out),
            ClientMsg::DelegateAgent(req) => self.delegate_agent(cx, req, db, out),
            ClientMsg::ContinueAgent(req) => self.continue_agent(cx, req, db, out),
            ClientMsg::ListWorkers(req) => self.list_workers(cx, req, db, out),
            ClientMsg::SteerAgent(req) => self.steer_agent(cx, req, db, out),
            ClientMsg::InterruptAgent(req) => self.interrupt_agent(cx, req, db, out),
            ClientMsg::ReplyAgent(req) => self.reply_agent(cx, req, db, out),
            ClientMsg::CloseAgent(req) => self.close_agent(cx, req, db, out),
            ClientMsg::InspectAgent(req) => self.inspect_agent(cx, req, db),
            ClientMsg::Peek(req) => self.peek(cx, req, db),
            ClientMsg::Diff(req) => self.diff(cx, req, db),
            ClientMsg::SendFile(req) => self.send_file(cx, req, db),
            ClientMsg::NewSession(req) => self.new_session(cx, req, db, out),
            ClientMsg::ContinueSession(req) => self.continue_session(cx, req, db, out),
            ClientMsg::CloseSession(req) => self.close_session(cx, req, db, out),
            ClientMsg::ListStarted(req) => self.list_started(cx, req, db, out),
            ClientMsg::ReadAgentTranscript(req) => self.read_agent_transcript(cx, req, db),
            ClientMsg::AskOwner(req) => self.ask_owner(cx, req, db, out),
            ClientMsg::ListAgents(req) => self.list_agents(cx, req, db),
            ClientMsg::Usage(req) => self.usage(cx, req, db),
            ClientMsg::DelegateProject(req) => self.delegate_project(cx, req, db, out),
            ClientMsg::ResumeWork(req) => self.resume_work(cx, req, db, out),
            ClientMsg::StopLead(req) => self.stop_lead(cx, req, db, out),
            ClientMsg::IntegrateBranch(req) => self.integrate_branch(cx, req, db, out),
            ClientMsg::ListProjects(req) => self.list_projects(cx, req, db, out),
            ClientMsg::ListHosts(_) => self.list_hosts(cx, out),
            ClientMsg::RequestApproval(req) => self.request_approval(cx, req, db, out),
            ClientMsg::DecideApproval(req) => self.decide_approval(cx, req, db, out),
            ClientMsg::WithdrawApproval(req) => self.withdraw_approval(cx, req, db, out),
            ClientMsg::ListApprovals(req) => self.list_approvals(cx, req, db, out),
            ClientMsg::ApproveAgent(req) => self.approve_agent(cx, req, db, out),
        }
    }

    fn ping(cx: Cx, out: &mut Out) -> HubResult<()> {
        out.send(cx.conn, &ServerMsg::Pong { id: cx.id });
        Ok(())
    }
}
