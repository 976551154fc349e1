//! Tokens kept in a file (`keepTokens`, `tokenFile`), so that a restarted process uses the
//! token and refresh token it was given instead of asking the person again: rmcp's credential
//! store, on a file only its owner can read (`0600` on Unix, in a directory of mode `0700`),
//! replaced whole at every save so that a reader never sees half of one.
//!
//! The file holds rmcp's credentials (the client ID, the tokens, the scopes granted, the issuer)
//! and, when the tokens were issued to a client that registered itself dynamically, that
//! client's registration (`registration`: its ID, the secret it was given, how it authenticates
//! at the token endpoint), which a refresh by the next process needs as much as the refresh
//! token.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use sha2::Digest;

use super::registration::Registration;

/// The key of the registration in the file, beside rmcp's credentials.
const REGISTRATION: &str = "registration";

/// Registrations a store remembers: the one kept in the file and those of the flows since, a
/// flow's being the last; a flow that failed leaves the tokens of the client before it, which
/// are still saved with their registration.
const REGISTRATIONS: usize = 4;

/// The credentials of one server, in one file.
#[derive(Clone, Debug)]
pub(super) struct FileStore {
    path: PathBuf,
    /// The clients this process registered, and the one read from the file: each save writes
    /// the registration of the client the tokens were issued to, when there is one.
    registrations: Arc<Mutex<Vec<Registration>>>,
}

impl FileStore {
    pub(super) fn new(path: PathBuf) -> Self {
        FileStore {
            path,
            registrations: Arc::default(),
        }
    }

    /// Remembers the client a flow registered, so that the tokens issued to it are saved with
    /// its registration.
    pub(super) fn registered(&self, registration: Registration) {
        let mut all = self.registrations.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|r| r.client_id != registration.client_id);
        all.push(registration);
        if all.len() > REGISTRATIONS {
            all.remove(0);
        }
    }

    /// The registration of `client_id`, when this process registered it or read it from the
    /// file.
    pub(super) fn registration(&self, client_id: &str) -> Option<Registration> {
        let all = self.registrations.lock().unwrap_or_else(|p| p.into_inner());
        all.iter().rev().find(|r| r.client_id == client_id).cloned()
    }

    /// Discards the kept tokens and every registration: the file is removed, and the next
    /// flow's tokens, with the client it registers, are saved afresh.
    pub(super) fn forget(&self) -> Result<(), AuthError> {
        self.registrations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.clear_now()
    }

    /// Whether credentials were kept.
    pub(super) fn exists(&self) -> bool {
        self.path.exists()
    }

    fn failed(&self, what: &str, e: std::io::Error) -> AuthError {
        AuthError::CredentialStoreError(format!(
            "the token file {} cannot be {what}: {e}",
            self.path.display()
        ))
    }

    fn load_now(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let text = match std::fs::read(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.failed("read", e)),
        };
        let read = serde_json::from_slice(&text).and_then(|mut kept: serde_json::Value| {
            let registration = kept
                .as_object_mut()
                .and_then(|fields| fields.remove(REGISTRATION));
            let credentials: StoredCredentials = serde_json::from_value(kept)?;
            let registration = registration
                .map(serde_json::from_value::<Registration>)
                .transpose()?;
            Ok((credentials, registration))
        });
        match read {
            Ok((credentials, registration)) => {
                // a registration is of the client the tokens were issued to, or of none
                if let Some(registration) =
                    registration.filter(|r| r.client_id == credentials.client_id)
                    && self.registration(&registration.client_id).is_none()
                {
                    self.registered(registration);
                }
                Ok(Some(credentials))
            }
            Err(_) => {
                // a file this process cannot use is as good as none: a new authorization
                // replaces it
                tracing::warn!(file = %self.path.display(), "the token file is not one; ignored");
                Ok(None)
            }
        }
    }

    fn save_now(&self, credentials: &StoredCredentials) -> Result<(), AuthError> {
        // the error of serde_json names no value, only what was wrong with it
        let wrong = |e: serde_json::Error| AuthError::CredentialStoreError(e.to_string());
        let mut kept = serde_json::to_value(credentials).map_err(wrong)?;
        if let (Some(fields), Some(registration)) = (
            kept.as_object_mut(),
            self.registration(&credentials.client_id),
        ) {
            fields.insert(
                REGISTRATION.to_owned(),
                serde_json::to_value(registration).map_err(wrong)?,
            );
        }
        let text = serde_json::to_vec(&kept).map_err(wrong)?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .create(dir)
                .map_err(|e| self.failed("given its directory", e))?;
        }
        let mut name = self.path.file_name().unwrap_or_default().to_owned();
        name.push(format!(".{}.tmp", std::process::id()));
        let temporary = self.path.with_file_name(name);
        let written = (|| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&temporary)?;
            // a file left by another owner's umask is made the owner's alone before the tokens
            #[cfg(unix)]
            std::fs::set_permissions(
                &temporary,
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            )?;
            std::io::Write::write_all(&mut file, &text)?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.path)
        })();
        written.map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            self.failed("written", e)
        })
    }

    fn clear_now(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.failed("removed", e)),
            _ => Ok(()),
        }
    }
}

type Done<'a, T> = Pin<Box<dyn Future<Output = Result<T, AuthError>> + Send + 'a>>;

// rmcp declares the trait with `async_trait`: these are the signatures that macro gives it. The
// file is a few hundred bytes, read and written in place.
impl CredentialStore for FileStore {
    fn load<'life0, 'async_trait>(&'life0 self) -> Done<'async_trait, Option<StoredCredentials>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move { self.load_now() })
    }

    fn save<'life0, 'async_trait>(
        &'life0 self,
        credentials: StoredCredentials,
    ) -> Done<'async_trait, ()>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move { self.save_now(&credentials) })
    }

    fn clear<'life0, 'async_trait>(&'life0 self) -> Done<'async_trait, ()>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move { self.clear_now() })
    }
}

/// Where the tokens of the server `server` at `url` are kept by default: `tool-mcp/oauth/` in
/// the user's data directory (`data_home`, else `.local/share` in `home`), one file per server
/// name and URL, so that a server renamed or moved starts afresh.
pub(super) fn default_path(
    data_home: Option<&Path>,
    home: Option<&Path>,
    server: &str,
    url: &str,
) -> Option<PathBuf> {
    let data = match data_home.filter(|d| d.is_absolute()) {
        Some(dir) => dir.to_owned(),
        None => home.filter(|h| h.is_absolute())?.join(".local/share"),
    };
    let digest = sha2::Sha256::digest(url.as_bytes());
    let tag: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let name: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(
        data.join("tool-mcp/oauth")
            .join(format!("{name}-{tag}.json")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_file_is_in_the_users_data_directory_one_per_server() {
        let at = |data: Option<&str>, home: Option<&str>, server: &str, url: &str| {
            default_path(data.map(Path::new), home.map(Path::new), server, url)
        };
        let one = at(
            Some("/data"),
            Some("/home/a"),
            "notes",
            "https://n.example/mcp",
        )
        .unwrap();
        assert!(one.starts_with("/data/tool-mcp/oauth/"), "{one:?}");
        assert!(one.to_string_lossy().ends_with(".json"));
        let home = at(None, Some("/home/a"), "notes", "https://n.example/mcp").unwrap();
        assert!(
            home.starts_with("/home/a/.local/share/tool-mcp/oauth/"),
            "{home:?}"
        );
        // a relative XDG_DATA_HOME is ignored, as the XDG specification says
        assert_eq!(
            at(
                Some("rel"),
                Some("/home/a"),
                "notes",
                "https://n.example/mcp"
            ),
            Some(home)
        );
        assert_eq!(at(None, None, "notes", "https://n.example/mcp"), None);
        let moved = at(Some("/data"), None, "notes", "https://other.example/mcp").unwrap();
        assert_ne!(one, moved);
        let odd = at(Some("/data"), None, "../../etc/x", "https://n.example/mcp").unwrap();
        assert_eq!(odd.parent(), Some(Path::new("/data/tool-mcp/oauth")));
    }

    #[tokio::test]
    async fn credentials_survive_in_a_file_only_the_owner_reads() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path().join("kept/notes.json"));
        assert!(store.load().await.unwrap().is_none());
        let token = serde_json::from_value(serde_json::json!({
            "access_token": "kept-access", "token_type": "Bearer", "expires_in": 60,
            "refresh_token": "kept-refresh"
        }))
        .unwrap();
        let saved =
            StoredCredentials::new("client".into(), Some(token), vec!["read".into()], Some(7))
                .with_issuer(Some("https://as.example".into()));
        store.save(saved).await.unwrap();
        let again = FileStore::new(dir.path().join("kept/notes.json"));
        let loaded = again.load().await.unwrap().unwrap();
        assert_eq!(loaded.client_id, "client");
        assert_eq!(loaded.issuer.as_deref(), Some("https://as.example"));
        assert_eq!(loaded.granted_scopes, ["read"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir.path().join("kept/notes.json")), 0o600);
            assert_eq!(mode(&dir.path().join("kept")), 0o700);
        }
        again.clear().await.unwrap();
        assert!(store.load().await.unwrap().is_none());
        // a file that is not one is no credentials, and is replaced by the next save
        std::fs::write(dir.path().join("kept/notes.json"), "not json").unwrap();
        assert!(store.load().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_registered_client_is_kept_with_the_tokens_issued_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.json");
        let store = FileStore::new(path.clone());
        let registration: Registration = serde_json::from_value(serde_json::json!({
            "client_id": "dyn-7", "client_secret": "secret-of-dyn-7",
            "token_endpoint_auth_method": "client_secret_post",
        }))
        .unwrap();
        store.registered(registration.clone());
        let issued = |client: &str| {
            let token = serde_json::from_value(serde_json::json!({
                "access_token": "a", "token_type": "Bearer", "refresh_token": "r"
            }))
            .unwrap();
            StoredCredentials::new(client.into(), Some(token), vec![], Some(7))
        };
        store.save(issued("dyn-7")).await.unwrap();

        // the next process reads the client's registration back with its tokens
        let again = FileStore::new(path.clone());
        assert_eq!(again.load().await.unwrap().unwrap().client_id, "dyn-7");
        assert_eq!(again.registration("dyn-7"), Some(registration));
        // and saves it again with the refreshed tokens
        again.save(issued("dyn-7")).await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("secret-of-dyn-7"), "{text}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // the store's Debug shows no secret
        assert!(!format!("{again:?}").contains("secret-of-dyn-7"));

        // tokens of another client are saved without it
        again.save(issued("pre-registered")).await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("secret-of-dyn-7"), "{text}");
        let third = FileStore::new(path);
        assert!(third.load().await.unwrap().is_some());
        assert_eq!(third.registration("dyn-7"), None);
    }

    #[tokio::test]
    async fn a_forgotten_client_leaves_neither_its_tokens_nor_its_registration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.json");
        let store = FileStore::new(path.clone());
        let registration: Registration = serde_json::from_value(serde_json::json!({
            "client_id": "dyn-8", "client_secret": "secret-of-dyn-8",
            "client_secret_expires_at": 1_900_000_000u64,
        }))
        .unwrap();
        store.registered(registration);
        let token = serde_json::from_value(serde_json::json!({
            "access_token": "a", "token_type": "Bearer", "refresh_token": "r"
        }))
        .unwrap();
        let issued = StoredCredentials::new("dyn-8".into(), Some(token), vec![], Some(7));
        store.save(issued.clone()).await.unwrap();
        // the secret's expiry is kept with the registration
        let again = FileStore::new(path.clone());
        again.load().await.unwrap();
        let kept = again.registration("dyn-8").unwrap();
        assert_eq!(kept.client_secret_expires_at, Some(1_900_000_000));

        again.forget().unwrap();
        assert!(!path.exists());
        assert!(again.load().await.unwrap().is_none());
        assert_eq!(again.registration("dyn-8"), None);
        // tokens saved afterwards are saved without it
        again.save(issued).await.unwrap();
        assert!(
            !std::fs::read_to_string(&path)
                .unwrap()
                .contains("secret-of-dyn-8")
        );
    }
}
