//! Who is on the other end of the socket: the peer's uid and gid from
//! SO_PEERCRED, with their names from the password and group databases
//! (cached: a submission burst must not read /etc/passwd per request).

use std::collections::HashMap;
use std::sync::Mutex;

use nix::unistd::{Gid, Group, Uid, User};
use tonic::transport::server::UdsConnectInfo;
use tonic::{Request, Status};

/// The caller as the socket tells it; the role is worked out by the task.
#[derive(Clone, Debug)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub group: String,
}

#[derive(Default)]
pub struct Identity {
    users: Mutex<HashMap<u32, String>>,
    groups: Mutex<HashMap<u32, String>>,
}

impl Identity {
    pub fn peer<T>(&self, request: &Request<T>) -> Result<Peer, Status> {
        let cred = request
            .extensions()
            .get::<UdsConnectInfo>()
            .and_then(|info| info.peer_cred)
            .ok_or_else(|| {
                Status::unauthenticated(
                    "the daemon could not read the caller's credentials from the socket",
                )
            })?;
        let (uid, gid) = (cred.uid(), cred.gid());
        Ok(Peer {
            uid,
            gid,
            user: self.user_name(uid),
            group: self.group_name(gid),
        })
    }

    pub fn user_name(&self, uid: u32) -> String {
        let mut cache = self.users.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(uid)
            .or_insert_with(|| match User::from_uid(Uid::from_raw(uid)) {
                Ok(Some(user)) => user.name,
                _ => uid.to_string(),
            })
            .clone()
    }

    pub fn group_name(&self, gid: u32) -> String {
        let mut cache = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry(gid)
            .or_insert_with(|| match Group::from_gid(Gid::from_raw(gid)) {
                Ok(Some(group)) => group.name,
                _ => gid.to_string(),
            })
            .clone()
    }
}

/// The group a job runs with when it asks for `group` (`qsub -W
/// group_list=`): its name and gid, if `user` is a member of it (as their
/// primary group or a supplementary one); else why not, in words.
pub fn member_group(user: &str, primary_gid: u32, group: &str) -> Result<(String, u32), String> {
    let found = match group.parse::<u32>() {
        Ok(gid) => Group::from_gid(Gid::from_raw(gid)),
        Err(_) => Group::from_name(group),
    };
    let found = match found {
        Ok(Some(g)) => g,
        Ok(None) => {
            return Err(format!(
                "-W group_list={group}: there is no group {group} on the server; see getent group"
            ));
        }
        Err(e) => {
            return Err(format!(
                "-W group_list={group}: cannot look up the group: {e}"
            ));
        }
    };
    let gid = found.gid.as_raw();
    let member = gid == primary_gid
        || found.mem.iter().any(|m| m == user)
        || std::ffi::CString::new(user)
            .ok()
            .and_then(|name| nix::unistd::getgrouplist(&name, Gid::from_raw(primary_gid)).ok())
            .is_some_and(|groups| groups.iter().any(|g| g.as_raw() == gid));
    if member {
        Ok((found.name, gid))
    } else {
        Err(format!(
            "-W group_list={group}: user {user} is not a member of group {}; see id {user}, or ask for a group you are in",
            found.name
        ))
    }
}
