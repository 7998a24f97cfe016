//! Operator policy: which tools may run, what each may reach, and its limits.
//!
//! The policy model (the file, its checks and errors, data-flow rules, pools) is the
//! `toolhost-policy` crate, re-exported here at the paths it had when it lived in this
//! crate. What stays is what needs the sandbox:
//!
//! - [`gate`]: [`Gate`], which applies a policy to calls (section, digest pin, allowed
//!   operations, rate limit) before the sandbox applies the grants.

pub mod gate;

pub use self::gate::Gate;
pub use toolhost_policy::flow;
pub use toolhost_policy::{
    ApprovalMode, DECLARED_SECTION, Declared, EnvValue, Flow, Located, OCI_SCHEME, OperationName,
    Policy, PolicyError, PoolName, SignatureRule, ToolName, ToolPolicy, Trust, TrustedKey, VERSION,
    check_tool_name, component_name, env_grant, file_grant,
};
