using System.Collections.Concurrent;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;

namespace Queue.Tests.Work;

/// <summary>Claim-ahead on: up to 64 items per task filter held in memory under a reservation.</summary>
public sealed class PrefetchFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?> { ["Claims:Prefetch"] = "64" };
}
