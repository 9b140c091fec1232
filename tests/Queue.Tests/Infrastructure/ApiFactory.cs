using System.Net.Http.Headers;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Mvc.Testing;
using Queue.Api;

namespace Queue.Tests.Infrastructure;

/// <summary>The real Queue.Api, in process, against a test class's database.</summary>
public sealed class ApiFactory(string connectionString, IDictionary<string, string?>? settings = null) : WebApplicationFactory<ApiEntry>
{
    protected override void ConfigureWebHost(IWebHostBuilder builder)
    {
        builder.UseSetting("ConnectionStrings:Queue", connectionString);
        // Revocation must be visible at once in tests.
        builder.UseSetting("Auth:KeyCacheSeconds", "0");
        foreach (var (k, v) in settings ?? new Dictionary<string, string?>())
        {
            builder.UseSetting(k, v);
        }
    }

    public HttpClient ClientWithKey(string? key)
    {
        var client = CreateClient();
        if (key is not null)
        {
            client.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", key);
        }
        return client;
    }
}

/// <summary>A database plus the Api on it, shared by the tests of one class.</summary>
public class ApiFixture : DatabaseFixture
{
    public ApiFactory Api { get; private set; } = null!;

    protected virtual IDictionary<string, string?> Settings => new Dictionary<string, string?>();

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        Api = new ApiFactory(ConnectionString, Settings);
        _ = Api.Server; // start it now, so the first test does not pay for it
    }

    public override async Task DisposeAsync()
    {
        await Api.DisposeAsync();
        await base.DisposeAsync();
    }
}
