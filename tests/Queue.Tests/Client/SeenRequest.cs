using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Http.Headers;
using Queue.Local;

namespace Queue.Tests.Client;

/// <summary>A request the proxy received: when (a Stopwatch timestamp), and under which Idempotency-Key.</summary>
public sealed record SeenRequest(string Method, string Path, string? IdempotencyKey, long At);
