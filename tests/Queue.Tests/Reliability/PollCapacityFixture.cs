using System.Net;
using System.Net.Http.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Reliability;

/// <summary>Small limits, so that "every poll permit is held" costs 32 requests instead of 1,024.</summary>
public sealed class PollCapacityFixture : WorkFixture
{
    public const int Limit = 32;

    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Limits:MaxConcurrentRequests"] = $"{Limit}",
        ["Limits:MaxConcurrentPolls"] = $"{Limit}",
        ["Claims:PollMilliseconds"] = "60000",
    };
}
