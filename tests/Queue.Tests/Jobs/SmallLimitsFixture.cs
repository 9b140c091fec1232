using System.Net;
using System.Net.Http.Headers;
using System.Text;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>The Api with small size limits, so that 413s are cheap to provoke.</summary>
public sealed class SmallLimitsFixture : ApiFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Limits:MaxDocumentBytes"] = "1024",
        ["Limits:MaxRequestBytes"] = "4096",
    };
}
