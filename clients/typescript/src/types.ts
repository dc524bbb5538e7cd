/**
 * The API's request and response types, by the names the OpenAPI document gives them
 * (`components.schemas`), generated from `openapi.json` at build time.
 */
import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];

export type Memory = Schemas["Memory"];
export type MemoryDraft = Schemas["MemoryDraft"];
export type MemoryList = Schemas["MemoryList"];
export type History = Schemas["History"];
export type DeleteResult = Schemas["DeleteResult"];
export type SearchRequest = Schemas["SearchRequest"];
export type SearchResponse = Schemas["SearchResponse"];
export type SearchResult = Schemas["SearchResult"];
export type Namespaces = Schemas["Namespaces"];
export type NamespaceEntry = Schemas["NamespaceEntry"];
export type DedupeRequest = Schemas["DedupeRequest"];
export type DedupeResult = Schemas["DedupeResult"];
export type ConsolidateRequest = Schemas["ConsolidateRequest"];
export type ConsolidateResult = Schemas["ConsolidateResult"];
export type ExportDocument = Schemas["ExportDocument"];
export type ExportItem = Schemas["ExportItem"];
export type ImportRequest = Schemas["ImportRequest"];
export type ImportResult = Schemas["ImportResult"];
export type SpawnRequest = Schemas["SpawnRequest"];
export type SpawnedAgent = Schemas["SpawnedAgent"];
export type Agent = Schemas["Agent"];
export type AgentList = Schemas["AgentList"];
export type AgentProgress = Schemas["AgentProgress"];
export type AgentLogEvent = Schemas["AgentLogEvent"];
export type AgentLogPage = Schemas["AgentLogPage"];
export type StopResult = Schemas["StopResult"];
export type EgressList = Schemas["EgressList"];
export type Component = Schemas["Component"];
export type ComponentList = Schemas["ComponentList"];
export type Tool = Schemas["Tool"];
export type ToolList = Schemas["ToolList"];
export type ListedTool = Schemas["ListedTool"];
export type ToolRequest = Schemas["ToolRequest"];
/** The body that registers an HTTP tool (`ToolRequest` of kind `http`). */
export type HttpToolRequest = Extract<ToolRequest, { kind: "http" }>;
/** The body that registers a remote MCP server (`ToolRequest` of kind `mcp`). */
export type McpServerRequest = Extract<ToolRequest, { kind: "mcp" }>;
export type ToolCallRequest = Schemas["ToolCallRequest"];
export type ToolCallResponse = Schemas["ToolCallResponse"];
export type ToolDeniedDetails = Schemas["ToolDeniedDetails"];
export type { components, paths } from "./generated/openapi.js";
