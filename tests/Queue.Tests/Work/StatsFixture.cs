using System.Net;
using Queue.Core.Claims;

namespace Queue.Tests.Work;

public sealed class StatsFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?> { ["Claims:StatsFlushMilliseconds"] = "200" };
}
