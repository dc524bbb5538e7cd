//! `sqlx::migrate!` embeds the migrations: a new one must rebuild the crate. (The guests
//! the host embeds are built by the `wasmind-guests` crate.)

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
