//! rmcp (the official Rust SDK) as a client of toolgate over Streamable
//! HTTP. rmcp validates what it receives into typed values (and drops what
//! it does not know), so this checks interoperability, not losslessness.

use anyhow::{Result, anyhow};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};

use crate::common::*;

fn arguments(value: Value) -> Option<serde_json::Map<String, Value>> {
    value.as_object().cloned()
}

#[tokio::test]
async fn rmcp_client_goes_through_the_workflow() -> Result<()> {
    let gw = Toolgate::start(&fixture_upstream("fx", &[], "")).await?;
    let transport = StreamableHttpClientTransport::from_uri(gw.url.clone());
    // rmcp offers its newest revision (2026-07-28) in `initialize`;
    // toolgate answers with the newest one it speaks.
    let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("rmcp-interop", "1.0"));
    assert_eq!(info.protocol_version, ProtocolVersion::LATEST);
    let client = info.serve(transport).await?;

    let server = serde_json::to_value(client.peer_info().ok_or_else(|| anyhow!("no server info"))?.as_ref())?;
    assert_eq!(server["serverInfo"]["name"], "toolgate", "{server}");
    assert_eq!(server["protocolVersion"], "2025-11-25");
    let negotiated = client.peer_info().map(|i| i.protocol_version.clone());
    assert_eq!(negotiated, Some(ProtocolVersion::V_2025_11_25));
    assert!(server["capabilities"]["tools"].is_object() && server["capabilities"]["resources"].is_object());

    let tools = client.list_all_tools().await?;
    let echo = tools.iter().find(|t| t.name == "echo").ok_or_else(|| anyhow!("echo not listed"))?;
    assert_eq!(Value::Object(echo.input_schema.as_ref().clone()), json!({"type": "object"}));
    assert!(echo.output_schema.is_none());
    assert_eq!(tools.last().map(|t| t.name.as_ref()), Some("describe_tools"));

    let resources = client.list_all_resources().await?;
    assert_eq!(resources.first().map(|r| r.uri.as_str()), Some("resource:///tool_descriptions"));

    let call = || CallToolRequestParams::new("echo").with_arguments(arguments(json!({"text": "from rmcp"})).unwrap());
    let refused = serde_json::to_value(client.call_tool(call()).await?)?;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(json_of(&refused)["error"]["code"], "TOOL_DESCRIPTION_REQUIRED", "{refused}");

    let read = serde_json::to_value(
        client.read_resource(ReadResourceRequestParams::new("resource:///tool_descriptions?tools=echo")).await?,
    )?;
    let body: Value = serde_json::from_str(read["contents"][0]["text"].as_str().unwrap_or(""))?;
    assert_eq!(body["echo"]["inputSchema"]["required"], json!(["text"]), "{read}");

    let called = serde_json::to_value(client.call_tool(call()).await?)?;
    assert_eq!(called["content"], json!([{"type": "text", "text": "from rmcp"}]), "{called}");
    assert_ne!(called["isError"], true);

    // The describe tool authorizes as well, through rmcp's typed call.
    let who = || CallToolRequestParams::new("fixture_whoami");
    assert_eq!(
        json_of(&serde_json::to_value(client.call_tool(who()).await?)?)["error"]["code"],
        "TOOL_DESCRIPTION_REQUIRED"
    );
    let described = CallToolRequestParams::new("describe_tools")
        .with_arguments(arguments(json!({"tools": ["fixture_whoami"]})).unwrap());
    let described = serde_json::to_value(client.call_tool(described).await?)?;
    assert_eq!(json_of(&described)["fixture_whoami"]["name"], "fixture_whoami", "{described}");
    let whoami = serde_json::to_value(client.call_tool(who()).await?)?;
    assert!(whoami["structuredContent"]["pid"].is_number(), "{whoami}");

    client.cancel().await?;
    Ok(())
}
