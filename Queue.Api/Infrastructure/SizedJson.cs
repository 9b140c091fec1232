using System.Reflection;
using System.Text.Json;
using Microsoft.AspNetCore.Http.Json;
using Microsoft.AspNetCore.Http.Metadata;
using Microsoft.Extensions.Options;

namespace Queue.Api.Infrastructure;

/// <summary>
/// A JSON answer serialised first and written with its Content-Length in one write. TypedResults' JSON answers are
/// chunked, and the serialiser's flush sends the body before the answer ends, so the terminating chunk goes out as a
/// second send (and a second TCP segment the client must read). On the hot routes (/next, POST /jobs, uploads) that was
/// one send in three. Bodies here are small (at most 100 items or one job's status), so buffering them costs nothing.
/// </summary>
internal static class SizedJson
{
    public static async Task WriteAsync<T>(HttpContext http, int status, T value, string? location)
    {
        var options = http.RequestServices.GetRequiredService<IOptions<JsonOptions>>().Value.SerializerOptions;
        var bytes = JsonSerializer.SerializeToUtf8Bytes(value, options.GetTypeInfo(typeof(T)));
        http.Response.StatusCode = status;
        if (location is not null)
        {
            http.Response.Headers.Location = location;
        }
        http.Response.ContentType = "application/json; charset=utf-8";
        http.Response.ContentLength = bytes.Length;
        await http.Response.Body.WriteAsync(bytes, http.RequestAborted);
    }

    public static void Describe<T>(EndpointBuilder builder, int status) =>
        builder.Metadata.Add(new ProducesResponseTypeMetadata(status, typeof(T), ["application/json"]));
}

/// <summary>The value, status and write shared by <see cref="JsonOk{T}"/> and <see cref="JsonCreated{T}"/>.</summary>
public abstract class SizedJsonResult<T>(int statusCode, T value, string? location) : IResult, IStatusCodeHttpResult, IValueHttpResult, IValueHttpResult<T>
{
    public T Value { get; } = value;

    object? IValueHttpResult.Value => Value;

    public int StatusCode { get; } = statusCode;

    int? IStatusCodeHttpResult.StatusCode => StatusCode;

    public Task ExecuteAsync(HttpContext httpContext) => SizedJson.WriteAsync(httpContext, StatusCode, Value, location);
}

/// <summary>200 with a JSON body of known length (see <see cref="SizedJson"/>).</summary>
public sealed class JsonOk<T>(T value) : SizedJsonResult<T>(StatusCodes.Status200OK, value, null), IEndpointMetadataProvider
{
    [System.Diagnostics.CodeAnalysis.SuppressMessage("Design", "CA1000", Justification = "IEndpointMetadataProvider's member is static by definition, as on ASP.NET's own Ok<T>.")]
    public static void PopulateMetadata(MethodInfo method, EndpointBuilder builder) => SizedJson.Describe<T>(builder, StatusCodes.Status200OK);
}

/// <summary>201 with a Location and a JSON body of known length (see <see cref="SizedJson"/>).</summary>
public sealed class JsonCreated<T>(string location, T value) : SizedJsonResult<T>(StatusCodes.Status201Created, value, location), IEndpointMetadataProvider
{
    public string Location { get; } = location;

    [System.Diagnostics.CodeAnalysis.SuppressMessage("Design", "CA1000", Justification = "IEndpointMetadataProvider's member is static by definition, as on ASP.NET's own Created<T>.")]
    public static void PopulateMetadata(MethodInfo method, EndpointBuilder builder) => SizedJson.Describe<T>(builder, StatusCodes.Status201Created);
}
