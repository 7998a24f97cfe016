//! Components that travel: pushing them to and pulling them from OCI registries, and the
//! content-addressed store that keeps what was pulled so runs work offline.
//!
//! # Layout
//!
//! - [`reference`](mod@reference): `oci://REGISTRY/REPOSITORY[:TAG|@sha256:HEX]` parsed and checked
//!   ([`OciRef`]); whether a registry is loopback (plain HTTP there without asking, and
//!   the only place `--insecure` is allowed).
//! - [`auth`]: credentials from the environment and the Docker config file
//!   ([`Credentials`]).
//! - [`registry`]: push and pull in the CNCF Wasm OCI artifact layout over `oci-client`;
//!   every manifest and component checked against its digest.
//! - [`signature`]: cosign's signature artifacts beside a component (`sha256-HEX.sig`),
//!   pulled and pushed ([`SignatureLayer`]); checking them is `toolhost_sign`'s.
//! - [`store`]: the local store, blobs named by digest, atomic 0600 writes, verified on
//!   every read ([`Store`]).
//! - [`resolve`]: the one entry loaders use: reference → pinned digest → a verified file in
//!   the store ([`Resolver`]); tags resolve once, at load, and offline from the store.
//! - [`error`]: [`DistError`], each message naming the reference, digest or file.
//!
//! Data flows reference → registry (or store) → digest check → store → the loader's path.
//! This crate has no wasmtime: it hands files to the runtime, which compiles them.

pub mod auth;
pub mod error;
pub mod reference;
pub mod registry;
pub mod resolve;
pub mod signature;
pub mod store;

pub use auth::Credentials;
pub use error::DistError;
pub use reference::OciRef;
pub use registry::{Connect, Fetched};
pub use resolve::{Resolved, Resolver};
pub use signature::SignatureLayer;
pub use store::Store;
