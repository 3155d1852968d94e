//! An HTTP inventory service (axum): `POST /orders` deducts stock under a lock,
//! with a fenced SQL write, so concurrent orders never oversell.
//!
//! The stock lives in a SQLite table of the service's own pool. Locks live in the
//! same pool ([`SqliteDriver::from_pool`]), or on the backend `LOCKKIT_URL` names.
//! Each order takes `inventory:<sku>`, reads the stock, and writes the new stock
//! with the lock's fencing token: the write is refused if a newer holder wrote
//! first, as it would be after this holder stalled past its lease.
//!
//! By default the example serves on 127.0.0.1, sends 32 concurrent clients at it
//! (4 orders each, 128 in all, for a stock of 100), checks that exactly 100 were
//! sold and none oversold, and exits. `-- serve` keeps serving instead:
//!
//! ```text
//! cargo run --example inventory_service
//! cargo run --example inventory_service -- serve
//! curl -X POST localhost:3000/orders -H 'content-type: application/json' -d '{"sku":"sku-1","qty":1}'
//! ```

#![allow(clippy::print_stdout)] // An example prints what it does.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use lockkit::Locker;
use lockkit::fence::{FencedUpdate, Placeholders};
use lockkit::sqlite::SqliteDriver;
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};

const STOCK: i64 = 100;
const CLIENTS: usize = 32;
const ORDERS_EACH: usize = 4;

#[derive(Clone)]
struct App {
    locks: Locker,
    db: SqlitePool,
    /// The fenced stock write.
    deduct: Arc<str>,
}

#[derive(Deserialize)]
struct Order {
    sku: String,
    qty: i64,
}

/// Deducts `qty` of `sku` under its lock; 409 when there is too little stock.
async fn order(State(app): State<App>, Json(order): Json<Order>) -> (StatusCode, Json<Value>) {
    match deduct(&app, &order).await {
        Ok(Some((left, token))) => (
            StatusCode::CREATED,
            Json(json!({ "sku": order.sku, "left": left, "token": token })),
        ),
        Ok(None) => (
            StatusCode::CONFLICT,
            Json(json!({ "error": "out of stock" })),
        ),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": e.to_string() })),
        ),
    }
}

async fn deduct(
    app: &App,
    order: &Order,
) -> Result<Option<(i64, u64)>, Box<dyn std::error::Error>> {
    if order.qty <= 0 {
        return Ok(None);
    }
    let key = format!("inventory:{}", order.sku);
    let guard = app.locks.lock(key).wait(Duration::from_secs(10)).await?;
    let token = guard.token().get();
    let stock: i64 = sqlx::query_scalar("SELECT stock FROM inventory WHERE sku = ?1")
        .bind(&order.sku)
        .fetch_one(&app.db)
        .await?;
    if stock < order.qty {
        guard.release().await?;
        return Ok(None);
    }
    let written = sqlx::query(sqlx::AssertSqlSafe(app.deduct.to_string()))
        .bind(stock - order.qty)
        .bind(i64::try_from(token)?)
        .bind(&order.sku)
        .execute(&app.db)
        .await?;
    guard.release().await?;
    if written.rows_affected() == 0 {
        return Err("a newer holder wrote first: this order's lock was lost".into());
    }
    Ok(Some((stock - order.qty, token)))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let db = SqlitePoolOptions::new()
        .connect_with(
            SqliteConnectOptions::new()
                .filename(scratch.path().join("shop.db"))
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .busy_timeout(Duration::from_secs(5)),
        )
        .await?;
    sqlx::query("CREATE TABLE inventory (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL, fence INTEGER NOT NULL DEFAULT 0)")
        .execute(&db)
        .await?;
    sqlx::query("INSERT INTO inventory (sku, stock) VALUES ('sku-1', ?1)")
        .bind(STOCK)
        .execute(&db)
        .await?;
    let locks = match std::env::var("LOCKKIT_URL") {
        Ok(url) => lockkit::connect(&url).await?,
        Err(_) => Locker::new(Arc::new(
            SqliteDriver::from_pool(db.clone(), "locks").await?,
        )),
    };
    let deduct = FencedUpdate::new("inventory", "sku")
        .set("stock")
        .sql(Placeholders::QuestionNumbered)?;
    let app = App {
        locks,
        db: db.clone(),
        deduct: deduct.into(),
    };
    let router = Router::new().route("/orders", post(order)).with_state(app);

    if std::env::args().any(|a| a == "serve") {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
        println!("serving on http://{}", listener.local_addr()?);
        return Ok(axum::serve(listener, router).await?);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/orders", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let (sold, refused) = storm(&url).await?;
    server.abort();

    let left: i64 = sqlx::query_scalar("SELECT stock FROM inventory WHERE sku = 'sku-1'")
        .fetch_one(&db)
        .await?;
    let oversold = (sold as i64 - STOCK).max(0) + (-left).max(0);
    println!(
        "{CLIENTS} clients, {} orders for a stock of {STOCK}: {sold} sold, {refused} refused \
         (out of stock), {left} left, {oversold} oversold",
        CLIENTS * ORDERS_EACH
    );
    if oversold != 0 || sold as i64 + left != STOCK {
        return Err("the stock does not add up".into());
    }
    Ok(())
}

/// `CLIENTS` concurrent clients, each sending `ORDERS_EACH` orders of one item:
/// how many were sold and how many refused.
async fn storm(url: &str) -> Result<(usize, usize), Box<dyn std::error::Error>> {
    // reqwest is built here without a TLS crypto provider of its own.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..CLIENTS {
        let (http, url) = (http.clone(), url.to_owned());
        clients.spawn(async move {
            let mut statuses = Vec::new();
            for _ in 0..ORDERS_EACH {
                let sent = http
                    .post(&url)
                    .json(&json!({ "sku": "sku-1", "qty": 1 }))
                    .send();
                statuses.push(sent.await?.status());
            }
            Ok::<_, reqwest::Error>(statuses)
        });
    }
    let (mut sold, mut refused) = (0, 0);
    while let Some(done) = clients.join_next().await {
        for status in done?? {
            match status {
                StatusCode::CREATED => sold += 1,
                StatusCode::CONFLICT => refused += 1,
                other => return Err(format!("an order failed: {other}").into()),
            }
        }
    }
    Ok((sold, refused))
}
