//! The cloud drive client (`tools/cloud_drive_client.py`, `tools/types.py`): the
//! `CloudDrive` state and its operations, with the original's results and `ValueError`
//! texts. A file's size is its length in characters (pydantic recomputes it from the
//! content whenever a file is built).

use office::py::lower;
use office::{DateTime, Dict};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SharingPermission {
    R,
    Rw,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudDriveFile {
    pub id_: String,
    pub filename: String,
    pub content: String,
    pub owner: String,
    pub last_modified: DateTime,
    #[serde(default)]
    pub shared_with: Dict<SharingPermission>,
    #[serde(default)]
    pub size: u64,
}

/// The drive as AgentDojo dumps it; `initial_files` and anything else kept as read (the
/// model rebuilds `files` from it when it parses: see `office::Inbox`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudDrive {
    pub account_email: String,
    pub files: Dict<CloudDriveFile>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

fn size(content: &str) -> u64 {
    content.chars().count() as u64
}

impl CloudDrive {
    /// `get_file_by_id`.
    pub fn get_file_by_id(&self, file_id: &str) -> Result<&CloudDriveFile, String> {
        self.files.get(file_id).ok_or_else(|| not_found(file_id))
    }

    fn file_mut(&mut self, file_id: &str) -> Result<&mut CloudDriveFile, String> {
        self.files
            .get_mut(file_id)
            .ok_or_else(|| not_found(file_id))
    }

    /// `list_files`.
    pub fn list_files(&self) -> Vec<CloudDriveFile> {
        self.files.values().cloned().collect()
    }

    /// `create_file`: owned by the account, modified now, under the next id.
    pub fn create_file(
        &mut self,
        filename: String,
        content: String,
    ) -> Result<CloudDriveFile, String> {
        let file = CloudDriveFile {
            id_: self.files.next_id()?,
            filename,
            size: size(&content),
            content,
            owner: self.account_email.clone(),
            last_modified: DateTime::now(),
            shared_with: Dict::default(),
        };
        self.files.set(&file.id_.clone(), file.clone());
        Ok(file)
    }

    /// `delete_file`: the file, gone from the drive.
    pub fn delete_file(&mut self, file_id: &str) -> Result<CloudDriveFile, String> {
        self.files.pop(file_id).ok_or_else(|| not_found(file_id))
    }

    /// `search_files_by_filename`: the name contains it, ignoring case; no match is no error.
    pub fn search_files_by_filename(&self, filename: &str) -> Vec<CloudDriveFile> {
        let q = lower(filename);
        self.files
            .values()
            .filter(|f| lower(&f.filename).contains(&q))
            .cloned()
            .collect()
    }

    /// `search_files`: the content contains the query, ignoring case.
    pub fn search_files(&self, query: &str) -> Result<Vec<CloudDriveFile>, String> {
        let q = lower(query);
        let found: Vec<_> = self
            .files
            .values()
            .filter(|f| lower(&f.content).contains(&q))
            .cloned()
            .collect();
        if found.is_empty() {
            return Err(format!(
                "No files found with the given query ('{query}'). Try a different search term."
            ));
        }
        Ok(found)
    }

    /// `append_to_file`: the content grows, the size follows, modified now.
    pub fn append_to_file(
        &mut self,
        file_id: &str,
        content: &str,
    ) -> Result<CloudDriveFile, String> {
        let file = self.file_mut(file_id)?;
        file.content.push_str(content);
        file.size = size(&file.content);
        file.last_modified = DateTime::now();
        Ok(file.clone())
    }

    /// `share_file`: `email` gets `permission` (replacing any it had, in its place).
    pub fn share_file(
        &mut self,
        file_id: &str,
        email: &str,
        permission: SharingPermission,
    ) -> Result<CloudDriveFile, String> {
        let file = self.file_mut(file_id)?;
        file.shared_with.set(email, permission);
        Ok(file.clone())
    }
}

fn not_found(file_id: &str) -> String {
    format!("File with ID '{file_id}' not found.")
}
