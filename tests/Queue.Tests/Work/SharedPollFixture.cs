using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Core;

namespace Queue.Tests.Work;

public sealed class SharedPollFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?> { ["Claims:PollMilliseconds"] = "100" };
}
